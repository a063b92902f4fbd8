/*
 * svc artifact pages: sign in and out, the version picker, `?part=` for documents, the list's deck
 * previews in dark mode, and the deck host
 * (the toolbar drives the sandboxed frame by postMessage; the frame reports the slide shown and hands
 * over links to other artifacts, which only this page may follow). Plain JavaScript, no build.
 */
(function () {
  "use strict";
  document.documentElement.classList.add("js");

  function ready(fn) {
    if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", fn);
    else fn();
  }

  /** An absolute URL of this server to go to (never another origin, never a protocol-relative path). */
  function safePath(href) {
    try {
      var url = new URL(href, location.origin);
      return url.origin === location.origin && url.pathname.indexOf("//") !== 0 ? url.href : null;
    } catch (e) {
      return null;
    }
  }

  function signIn(form) {
    var error = form.querySelector("[data-error]");
    form.addEventListener("submit", function (e) {
      e.preventDefault();
      error.textContent = "";
      var data = new FormData(form);
      var button = form.querySelector("button[type=submit]");
      button.disabled = true;
      fetch("/api/auth/sign-in", {
        method: "POST",
        credentials: "same-origin",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ identity: String(data.get("identity") || ""), password: String(data.get("password") || "") }),
      })
        .then(function (res) {
          if (res.ok) {
            location.assign(safePath(form.getAttribute("data-next")) || "/artifacts");
            return;
          }
          return res.json().then(function (body) {
            error.textContent = res.status === 401 ? "Wrong identity or password." : (body && body.error && body.error.message) || "Could not sign in (" + res.status + ").";
          });
        })
        .catch(function () { error.textContent = "The server cannot be reached."; })
        .finally(function () { button.disabled = false; });
    });
  }

  /**
   * On a dark page, a deck's list preview that is the deck check's (light) screenshot becomes the live
   * thumbnail, which follows the colour scheme (list.ts marks those with data-dark-thumbnail).
   */
  function darkPreviews() {
    var dark = window.matchMedia("(prefers-color-scheme: dark)");
    function swap() {
      if (!dark.matches) return;
      document.querySelectorAll("img[data-dark-thumbnail]").forEach(function (img) {
        var src = safePath(img.getAttribute("data-dark-thumbnail"));
        if (!src) return;
        var frame = document.createElement("iframe");
        frame.className = "preview-frame";
        frame.setAttribute("sandbox", "allow-scripts");
        frame.setAttribute("loading", "lazy");
        frame.setAttribute("tabindex", "-1");
        frame.setAttribute("referrerpolicy", "no-referrer");
        frame.title = img.getAttribute("data-title") || "First slide";
        frame.src = src;
        img.replaceWith(frame);
      });
    }
    swap();
    dark.addEventListener("change", swap);
  }

  function signOut(button) {
    button.addEventListener("click", function () {
      fetch("/api/auth/session", { credentials: "same-origin" })
        .then(function (res) { return res.ok ? res.json() : null; })
        .then(function (session) {
          if (!session) return;
          return fetch("/api/auth/sign-out", { method: "POST", credentials: "same-origin", headers: { "x-svc-csrf": session.csrfToken } });
        })
        .finally(function () { location.assign("/sign-in"); });
    });
  }

  function deck(frame) {
    var position = document.querySelector("[data-deck-position]");
    var count = Number(frame.getAttribute("data-count")) || 0;
    function send(action) {
      if (frame.contentWindow) frame.contentWindow.postMessage({ type: "svc-kit", action: action }, "*");
    }
    window.addEventListener("message", function (e) {
      if (e.source !== frame.contentWindow || !e.data || typeof e.data !== "object") return;
      if (e.data.type === "svc-slide" && typeof e.data.part === "number") {
        count = e.data.count || count;
        if (position) position.textContent = e.data.part + " / " + count;
        var url = new URL(location.href);
        url.searchParams.set("part", String(e.data.part));
        history.replaceState(null, "", url);
      } else if (e.data.type === "svc-open" && typeof e.data.href === "string") {
        var target = safePath(e.data.href);
        if (target && new URL(target).pathname.indexOf("/artifacts/") === 0) location.assign(target);
      }
    });
    // the slides' keys work on this page too, not only once the frame has focus (← → move, O overview,
    // F present); the page's own scrolling keys (↑ ↓ Page Up/Down, Home, End) stay the page's
    var KEYS = { ArrowRight: "next", ArrowLeft: "prev", o: "overview", O: "overview", f: "present", F: "present" };
    document.addEventListener("keydown", function (e) {
      if (e.defaultPrevented || e.altKey || e.ctrlKey || e.metaKey || e.shiftKey && e.key.length > 1 || !(e.key in KEYS)) return;
      if (/^(INPUT|TEXTAREA|SELECT)$/.test(e.target.tagName) || e.target.isContentEditable) return;
      var action = KEYS[e.key];
      if (action === "present") present();
      else send(action);
      e.preventDefault();
    });
    function present() {
      if (frame.requestFullscreen) frame.requestFullscreen().catch(function () {});
      frame.focus();
    }
    document.querySelectorAll("[data-deck]").forEach(function (button) {
      button.addEventListener("click", function () {
        var action = button.getAttribute("data-deck");
        if (action === "present") return present();
        send(action);
        frame.focus();
      });
    });
  }

  ready(function () {
    document.querySelectorAll("form[data-sign-in]").forEach(signIn);
    document.querySelectorAll("[data-sign-out]").forEach(signOut);
    if (document.body.classList.contains("list")) darkPreviews();
    var frame = document.querySelector("iframe[data-deck-frame]");
    if (frame) deck(frame);
    // ?part=<heading slug> on a document: go to that section (again once images have their size)
    var part = new URLSearchParams(location.search).get("part");
    var target = part && document.body.classList.contains("kind-document") && !location.hash ? document.getElementById(part) : null;
    if (target) {
      target.scrollIntoView();
      window.addEventListener("load", function () { if (window.scrollY < 10 || Math.abs(target.getBoundingClientRect().top) > 120) target.scrollIntoView(); });
    }
  });
})();
