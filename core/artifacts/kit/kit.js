/*
 * svc slides kit runtime (spec 2.10): scales the 1280x720 slides to the frame, numbers them, moves
 * between them (buttons; keys: arrows, PageUp/PageDown, space, Home/End, O or Escape for the overview,
 * F for present mode), opens at ?part=<n>, and tells the embedding page which slide shows
 * (postMessage { type: "svc-slide", part, count }).
 *
 * Options, read from window.SVC_KIT before this script runs: { mode: "light" | "dark" } pins the
 * theme (data-theme on <html>); { layout: "stack" } shows every slide at full size, one after another
 * (the deck checks); { layout: "thumbnail" } shows one slide without chrome, embeds as empty boxes
 * with their title (previews). Links the server marked data-svc-open (artifact addresses) are handed to
 * the embedding page (postMessage { type: "svc-open", href }): a sandboxed frame cannot navigate it.
 * Exposes window.svcKit = { go(n), next(), prev(), overview(on), count, current }.
 */
(function () {
  "use strict";
  var W = 1280, H = 720;
  var root = document.documentElement;
  var options = window.SVC_KIT || {};
  if (options.mode === "light" || options.mode === "dark") root.setAttribute("data-theme", options.mode);
  if (options.layout === "stack") root.classList.add("kit-stack");
  if (options.layout === "thumbnail") root.classList.add("kit-thumbnail");

  var slides = [];
  var current = 0;
  var overview = false;
  var output;

  function clamp(n) { return Math.max(0, Math.min(slides.length - 1, n)); }

  function fit() {
    root.style.setProperty("--kit-scale", String(Math.min(innerWidth / W, innerHeight / H)));
    if (overview) layoutOverview();
  }

  function show(n, quiet) {
    if (!slides.length) return;
    current = clamp(n);
    slides.forEach(function (s, i) {
      if (i === current) s.setAttribute("data-current", "");
      else s.removeAttribute("data-current");
      if (i === current || overview || root.classList.contains("kit-stack")) s.removeAttribute("aria-hidden");
      else s.setAttribute("aria-hidden", "true");
    });
    if (output) output.textContent = current + 1 + " / " + slides.length;
    api.current = current + 1;
    if (quiet) return;
    try {
      var url = new URL(location.href);
      url.searchParams.set("part", String(current + 1));
      history.replaceState(null, "", url);
    } catch (e) { /* an opaque or sandboxed origin may refuse; the part still shows */ }
    if (parent !== window) parent.postMessage({ type: "svc-slide", part: current + 1, count: slides.length }, "*");
  }

  function layoutOverview() {
    var gap = 24, cols = innerWidth >= 1100 ? 4 : innerWidth >= 700 ? 3 : 2;
    var thumb = (innerWidth - gap * (cols + 1)) / cols / W;
    root.style.setProperty("--kit-thumb", String(thumb));
    slides.forEach(function (s, i) {
      s.style.setProperty("--kit-x", gap + (i % cols) * (W * thumb + gap) + "px");
      s.style.setProperty("--kit-y", gap + Math.floor(i / cols) * (H * thumb + gap) + "px");
    });
    document.body.style.height = gap + Math.ceil(slides.length / cols) * (H * thumb + gap) + "px";
  }

  function setOverview(on) {
    overview = !!on;
    root.classList.toggle("kit-overview", overview);
    if (overview) layoutOverview();
    else {
      document.body.style.height = "";
      slides.forEach(function (s) { s.style.removeProperty("--kit-x"); s.style.removeProperty("--kit-y"); });
    }
    show(current, true);
    if (overview) slides[current].scrollIntoView({ block: "nearest" });
  }

  function button(label, title, onClick) {
    var b = document.createElement("button");
    b.type = "button";
    b.textContent = label;
    b.title = title;
    b.setAttribute("aria-label", title);
    b.addEventListener("click", onClick);
    return b;
  }

  var api = {
    count: 0,
    current: 1,
    go: function (n) { show(n - 1); },
    next: function () { show(current + 1); },
    prev: function () { show(current - 1); },
    overview: setOverview,
  };
  window.svcKit = api;

  function init() {
    slides = Array.prototype.slice.call(document.querySelectorAll("section.slide"));
    api.count = slides.length;
    slides.forEach(function (s, i) { s.setAttribute("data-slide", String(i + 1)); });
    if (!root.classList.contains("kit-stack") && !root.classList.contains("kit-thumbnail")) {
      var nav = document.createElement("nav");
      nav.className = "kit-nav";
      nav.setAttribute("data-kit", "");
      nav.setAttribute("aria-label", "Slides");
      output = document.createElement("output");
      nav.append(
        button("\u2039", "Previous slide", api.prev),
        output,
        button("\u203A", "Next slide", api.next),
        button("\u25A6", "Overview (O)", function () { setOverview(!overview); }),
        button("\u2922", "Present (F)", present),
      );
      document.body.appendChild(nav);
      var idle;
      addEventListener("mousemove", function () {
        root.classList.add("kit-active");
        clearTimeout(idle);
        idle = setTimeout(function () { root.classList.remove("kit-active"); }, 1800);
      });
    }
    var part = parseInt(new URLSearchParams(location.search).get("part") || "1", 10);
    fit();
    show(isNaN(part) ? 0 : part - 1, root.classList.contains("kit-stack"));
  }

  function present() {
    if (document.fullscreenElement) document.exitFullscreen();
    else if (root.requestFullscreen) root.requestFullscreen().catch(function () {});
  }

  addEventListener("resize", fit);
  // a frame laid out at 0x0 first (a slide's scale then 0) does not always get a resize event once it
  // has its size: a clean-clone run saw a 1176x662 frame keep --kit-scale 0, its slide invisible. An
  // observer of the root's box reports every change of it, the first one included.
  if (typeof ResizeObserver === "function") new ResizeObserver(function () { fit(); }).observe(root);
  addEventListener("keydown", function (e) {
    if (e.defaultPrevented || e.altKey || e.ctrlKey || e.metaKey) return;
    if (/^(INPUT|TEXTAREA|SELECT)$/.test(e.target.tagName) || e.target.isContentEditable) return;
    var k = e.key;
    if (k === "ArrowRight" || k === "ArrowDown" || k === "PageDown" || k === " " || k === "Enter" && !overview) api.next();
    else if (k === "ArrowLeft" || k === "ArrowUp" || k === "PageUp" || k === "Backspace") api.prev();
    else if (k === "Home") show(0);
    else if (k === "End") show(slides.length - 1);
    else if (k === "o" || k === "O" || k === "Escape" && overview) setOverview(!overview);
    else if (k === "Enter" && overview) setOverview(false);
    else if (k === "f" || k === "F") present();
    else return;
    e.preventDefault();
  });
  document.addEventListener("click", function (e) {
    var link = e.target.closest && e.target.closest("a[data-svc-open]");
    if (link && parent !== window && !overview) {
      e.preventDefault();
      parent.postMessage({ type: "svc-open", href: link.getAttribute("href") }, "*");
      return;
    }
    if (!overview) return;
    var s = e.target.closest && e.target.closest("section.slide");
    if (s) { show(slides.indexOf(s)); setOverview(false); }
  });

  // the embedding page's toolbar (spec 2.10: previous/next, overview, present live outside the frame too)
  addEventListener("message", function (e) {
    if (e.source !== parent || parent === window || !e.data || e.data.type !== "svc-kit") return;
    var action = e.data.action;
    if (action === "next") api.next();
    else if (action === "prev") api.prev();
    else if (action === "overview") setOverview(!overview);
    else if (typeof action === "number") api.go(action);
  });

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
