/*
 * svc pages: sign in and out, the API tokens page (make, copy once, revoke), the version picker, `?part=` for documents, the list's deck
 * previews in dark mode, and the deck host
 * (the toolbar drives the sandboxed frame by postMessage; the frame reports the slide shown and hands
 * over links to other artifacts, which only this page may follow). Plain JavaScript, no build.
 */
(function () {
  "use strict";
  document.documentElement.classList.add("js");
  /** The path prefix a proxy serves the service under ("" for none): every URL below goes under it (shell.ts sets it). */
  var BASE = document.documentElement.getAttribute("data-base") || "";

  function ready(fn) {
    if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", fn);
    else fn();
  }

  /** An absolute URL of this service to go to (never another origin, a protocol-relative path, a path outside BASE, or one with an encoded / \\ or .). */
  function safePath(href) {
    try {
      var url = new URL(href, location.origin);
      return url.origin === location.origin && url.pathname.indexOf("//") !== 0 && url.pathname.indexOf(BASE + "/") === 0 && !/%(2f|5c|2e)/i.test(url.pathname) ? url.href : null;
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
      fetch(BASE + "/api/auth/sign-in", {
        method: "POST",
        credentials: "same-origin",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ identity: String(data.get("identity") || ""), password: String(data.get("password") || "") }),
      })
        .then(function (res) {
          if (res.ok) {
            location.assign(safePath(form.getAttribute("data-next")) || BASE + "/artifacts");
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
      fetch(BASE + "/api/auth/session", { credentials: "same-origin" })
        .then(function (res) { return res.ok ? res.json() : null; })
        .then(function (session) {
          if (!session) return;
          return fetch(BASE + "/api/auth/sign-out", { method: "POST", credentials: "same-origin", headers: { "x-svc-csrf": session.csrfToken } });
        })
        .finally(function () { location.assign(BASE + "/sign-in"); });
    });
  }

  /** The session's CSRF token (for the API's mutating calls), or null when signed out. */
  function csrfToken() {
    return fetch(BASE + "/api/auth/session", { credentials: "same-origin" })
      .then(function (res) { return res.ok ? res.json() : null; })
      .then(function (session) { return session && session.csrfToken; });
  }

  /** A mutating call of the API as the signed-in user (`path` of the API, without BASE): its status and JSON body. */
  function apiPost(path, body) {
    return csrfToken().then(function (csrf) {
      if (!csrf) return { status: 401, body: null };
      var headers = { "x-svc-csrf": csrf };
      if (body !== undefined) headers["content-type"] = "application/json";
      return fetch(BASE + path, { method: "POST", credentials: "same-origin", headers: headers, body: body === undefined ? undefined : JSON.stringify(body) }).then(function (res) {
        return res.json().then(function (json) { return { status: res.status, body: json }; }, function () { return { status: res.status, body: null }; });
      });
    });
  }

  function cell(text, cls) {
    var td = document.createElement("td");
    if (cls) td.className = cls;
    td.textContent = text;
    return td;
  }

  /**
   * The API tokens page: the form makes a token (POST /api/tokens) and shows its secret once, with a
   * copy button, and adds its row; each row's Revoke button revokes it (POST /api/tokens/:id/revoke).
   */
  function tokens(form) {
    var error = form.querySelector("[data-error]");
    var box = document.querySelector("[data-token-secret]");
    var rows = document.querySelector("[data-token-rows]");
    form.addEventListener("submit", function (e) {
      e.preventDefault();
      error.textContent = "";
      var name = String(new FormData(form).get("name") || "").trim();
      if (!name) {
        error.textContent = "Give the token a name: what it is for.";
        form.querySelector("[name=name]").focus();
        return;
      }
      var days = Number(new FormData(form).get("lifetimeDays")) || 90;
      var button = form.querySelector("button[type=submit]");
      button.disabled = true;
      apiPost("/api/tokens", { name: name, expiresInMs: days * 86400000 })
        .then(function (r) {
          if (r.status !== 201) {
            error.textContent = (r.body && r.body.error && r.body.error.message) || "Could not make the token (" + r.status + ").";
            return;
          }
          var info = r.body.tokenInfo;
          box.querySelector("[data-secret]").textContent = r.body.token;
          box.querySelector("[data-secret-name]").textContent = "“" + info.name + "”";
          box.hidden = false;
          box.focus();
          var tr = document.createElement("tr");
          tr.setAttribute("data-token-id", info.id);
          var th = document.createElement("th");
          th.scope = "row";
          th.textContent = info.name;
          var idLine = document.createElement("span");
          idLine.className = "token-id";
          idLine.textContent = info.id;
          th.append(idLine);
          tr.append(th, cell("just now"), cell(new Date(info.expiresAt).toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short", timeZone: "UTC" }) + " UTC"), cell("never", "meta"));
          var state = cell("");
          state.innerHTML = '<span class="token-state" data-state="active">Active</span>';
          var actions = cell("", "token-actions");
          var revoke = document.createElement("button");
          revoke.type = "button";
          revoke.className = "button button-quiet";
          revoke.textContent = "Revoke";
          revoke.setAttribute("data-token-revoke", info.id);
          revoke.setAttribute("data-token-name", info.name);
          actions.append(revoke);
          tr.append(state, actions);
          rows.prepend(tr);
          var table = rows.closest("table");
          table.hidden = false;
          var empty = document.querySelector("[data-tokens-empty]");
          if (empty) empty.remove();
          form.reset();
        })
        .catch(function () { error.textContent = "The server cannot be reached."; })
        .finally(function () { button.disabled = false; });
    });
    box.querySelector("[data-copy]").addEventListener("click", function () {
      var copy = this;
      navigator.clipboard.writeText(box.querySelector("[data-secret]").textContent).then(function () {
        copy.textContent = "Copied";
      }, function () {
        copy.textContent = "Select it and copy";
      });
    });
    document.addEventListener("click", function (e) {
      var button = e.target.closest && e.target.closest("[data-token-revoke]");
      if (!button) return;
      var id = button.getAttribute("data-token-revoke");
      if (!window.confirm("Revoke “" + button.getAttribute("data-token-name") + "”? Scripts using it stop working at once.")) return;
      button.disabled = true;
      apiPost("/api/tokens/" + encodeURIComponent(id) + "/revoke").then(function (r) {
        var row = button.closest("tr");
        if (r.status === 200 || r.status === 404) {
          var state = row.querySelector(".token-state");
          state.textContent = "Revoked";
          state.setAttribute("data-state", "revoked");
          button.remove();
        } else {
          button.disabled = false;
          error.textContent = (r.body && r.body.error && r.body.error.message) || "Could not revoke the token (" + r.status + ").";
        }
      });
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
        if (target && new URL(target).pathname.indexOf(BASE + "/artifacts/") === 0) location.assign(target);
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
    document.querySelectorAll("form[data-token-create]").forEach(tokens);
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
