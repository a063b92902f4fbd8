/*
 * Runs inside the deck's page (core/artifacts/deck-check.ts evaluates this expression with its options),
 * with the kit's stacked layout: every <section class="slide"> at 1280x720, one after another. Answers,
 * per slide, the layout findings of spec 4.3 (all but contrast, which axe-core checks):
 *   overflow        content past the slide's edge
 *   footer_overlap  content over the slide's footer (.source)
 *   text_overlap    text over other text
 *   text_cut_off    text cut off by a box that clips it
 *   small_text      text under 18px (as rendered: font size times any scaling)
 *   broken_image    an image that does not load or decode
 * Each finding: { code, element, text?, count, detail }. Elements added by the kit ([data-kit]) are skipped.
 * Elements found overlapping get a data-svc-overlap attribute: axe-core's "needs review" for them
 * (it cannot decide the contrast of overlapped text) would only repeat the overlap finding.
 */
(async function svcDeckMeasure(options) {
  var TOLERANCE = 1;
  var MIN_FONT_PX = 18;
  var slides = Array.prototype.slice.call(document.querySelectorAll("section.slide"));
  var failed = new Set(options.failedUrls || []);
  var cdnHosts = options.cdnHosts || [];

  // settle: lazy images load now, every image finishes, fonts are ready, two frames pass
  var images = Array.prototype.slice.call(document.images);
  images.forEach(function (img) { if (img.loading === "lazy") img.loading = "eager"; });
  var settled = Promise.all(images.map(function (img) {
    return img.complete ? null : new Promise(function (resolve) { img.addEventListener("load", resolve, { once: true }); img.addEventListener("error", resolve, { once: true }); });
  }).concat([document.fonts ? document.fonts.ready : null]));
  await Promise.race([settled, new Promise(function (r) { setTimeout(r, options.settleMs || 2000); })]);
  await new Promise(function (r) { requestAnimationFrame(function () { requestAnimationFrame(r); }); });

  function snippet(text) {
    var t = (text || "").replace(/\s+/g, " ").trim();
    return t.length > 48 ? t.slice(0, 47) + "\u2026" : t;
  }
  /** A short selector for el inside its slide: tag, id or up to two classes, :nth-of-type when needed. */
  function describe(el, slide) {
    var parts = [];
    for (var node = el; node && node !== slide && node.nodeType === 1; node = node.parentElement) {
      var tag = node.localName;
      if (node.id) { parts.unshift(tag + "#" + CSS.escape(node.id)); break; }
      var part = tag;
      var classes = Array.prototype.slice.call(node.classList, 0, 2);
      if (classes.length) part += "." + classes.map(function (c) { return CSS.escape(c); }).join(".");
      var parent = node.parentElement;
      if (parent) {
        var same = Array.prototype.filter.call(parent.children, function (c) { return c.localName === tag; });
        if (same.length > 1 && !classes.length) part += ":nth-of-type(" + (same.indexOf(node) + 1) + ")";
      }
      parts.unshift(part);
      if (parts.length >= 3) break;
    }
    return parts.join(" > ") || el.localName;
  }
  function visible(el) {
    return el.checkVisibility ? el.checkVisibility({ opacityProperty: true, visibilityProperty: true }) : true;
  }
  function rectOf(r) { return { left: r.left, top: r.top, right: r.right, bottom: r.bottom, width: r.width, height: r.height }; }
  function intersect(a, b) {
    var w = Math.min(a.right, b.right) - Math.max(a.left, b.left);
    var h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
    return w > 0 && h > 0 ? { width: w, height: h } : null;
  }
  /** How far r sticks out of box, by side (0 when it does not). */
  function outside(r, box) {
    var by = { left: box.left - r.left, right: r.right - box.right, top: box.top - r.top, bottom: r.bottom - box.bottom };
    var side = null, most = TOLERANCE;
    for (var k in by) if (by[k] > most) { most = by[k]; side = k; }
    return side ? { side: side, px: Math.round(most) } : null;
  }
  /** The inside of el's border box (what overflow clips to). */
  function clipBox(el) {
    var r = el.getBoundingClientRect();
    var sx = el.offsetWidth ? r.width / el.offsetWidth : 1, sy = el.offsetHeight ? r.height / el.offsetHeight : 1;
    var left = r.left + el.clientLeft * sx, top = r.top + el.clientTop * sy;
    return { left: left, top: top, right: left + el.clientWidth * sx, bottom: top + el.clientHeight * sy, width: el.clientWidth * sx, height: el.clientHeight * sy };
  }
  function clips(el) {
    var s = getComputedStyle(el);
    return s.overflowX !== "visible" || s.overflowY !== "visible" || s.contain.indexOf("paint") !== -1;
  }
  var REPLACED = { img: 1, svg: 1, canvas: 1, video: 1, iframe: 1, object: 1, embed: 1, "svc-embed": 1 };
  var SKIP_TEXT = { script: 1, style: 1, noscript: 1, template: 1, title: 1 };

  return slides.map(function (slide) {
    var findings = [];
    var box = rectOf(slide.getBoundingClientRect());
    var slideArea = box.width * box.height;
    var sources = Array.prototype.slice.call(slide.querySelectorAll(".source")).filter(visible);
    var sourceBoxes = sources.map(function (s) { return rectOf(s.getBoundingClientRect()); }).filter(function (r) { return r.width > 0 && r.height > 0; });
    function inSource(el) { return sources.some(function (s) { return s.contains(el); }); }
    function isSourceAncestor(el) { return sources.some(function (s) { return el.contains(s); }); }
    function kit(el) { return !!(el.closest && el.closest("[data-kit]")); }
    /**
     * The nearest box between el and the slide that clips, if any (a 1-2px box hides, it does not
     * clip). For text, el is the element holding it, which clips it too when its own overflow is not
     * visible (`<p style="height:40px;overflow:hidden">`, `text-overflow: ellipsis`): `self` starts there.
     * For a box (an image), its own overflow clips what is inside it, not itself: from its parent.
     */
    function clipper(el, self) {
      for (var a = self ? el : el.parentElement; a && a !== slide; a = a.parentElement) if (clips(a)) return a;
      return null;
    }

    // text: one entry per line box of each visible text node
    var texts = [];
    var walker = document.createTreeWalker(slide, NodeFilter.SHOW_TEXT);
    for (var node = walker.nextNode(); node; node = walker.nextNode()) {
      if (!node.data.trim()) continue;
      var el = node.parentElement;
      if (!el || SKIP_TEXT[el.localName] || kit(el) || el.closest("svc-embed") || !visible(el)) continue;
      var rects;
      if (el instanceof SVGElement) rects = [el.getBoundingClientRect()];
      else {
        var range = document.createRange();
        range.selectNodeContents(node);
        rects = Array.prototype.slice.call(range.getClientRects());
      }
      rects = rects.filter(function (r) { return r.width > 0.5 && r.height > 0.5; }).map(rectOf);
      if (!rects.length) continue;
      texts.push({ node: node, el: el, rects: rects, source: inSource(el) });
    }

    // content boxes: replaced elements, and boxes that paint a background or border
    var boxes = [];
    Array.prototype.forEach.call(slide.querySelectorAll("*"), function (el) {
      if (kit(el) || SKIP_TEXT[el.localName] || (el.ownerSVGElement && el.localName !== "svg")) return;
      if (el.closest("svg") && el.localName !== "svg") return;
      var r = el.getBoundingClientRect();
      if (r.width < 1 || r.height < 1 || !visible(el)) return;
      var replaced = !!REPLACED[el.localName];
      if (!replaced) {
        var s = getComputedStyle(el);
        var paints = (s.backgroundColor && !/^(transparent|rgba\(\d+, \d+, \d+, 0\))$/.test(s.backgroundColor)) || s.backgroundImage !== "none" ||
          parseFloat(s.borderTopWidth) + parseFloat(s.borderBottomWidth) + parseFloat(s.borderLeftWidth) + parseFloat(s.borderRightWidth) > 0;
        if (!paints) return;
      }
      var rr = rectOf(r);
      boxes.push({ el: el, rect: rr, background: rr.width * rr.height >= 0.9 * slideArea });
    });

    // past the slide's edge, and cut off inside it
    var overflow = [], cut = [];
    texts.forEach(function (t) {
      var c = clipper(t.el, true);
      if (c) {
        var cb = clipBox(c);
        if (cb.width <= 2 || cb.height <= 2) return; // visually hidden (sr-only), not cut off
        for (var i = 0; i < t.rects.length; i++) {
          var o = outside(t.rects[i], cb);
          if (o) { cut.push({ el: t.el, text: t.node.data, clip: c, px: o.px }); return; }
        }
      }
      for (var j = 0; j < t.rects.length; j++) {
        var out = outside(t.rects[j], box);
        if (out) { overflow.push({ el: t.el, text: t.node.data, side: out.side, px: out.px }); return; }
      }
    });
    boxes.forEach(function (b) {
      if (clipper(b.el)) return; // cropped inside the slide on purpose
      var out = outside(b.rect, box);
      if (out && !overflow.some(function (o) { return b.el.contains(o.el) || o.el.contains(b.el); })) overflow.push({ el: b.el, side: out.side, px: out.px });
    });
    if (overflow.length) {
      var o = overflow[0];
      findings.push({ code: "overflow", element: describe(o.el, slide), text: o.text && snippet(o.text), count: overflow.length, detail: { side: o.side, px: o.px } });
    }
    if (cut.length) {
      var c0 = cut[0];
      findings.push({ code: "text_cut_off", element: describe(c0.el, slide), text: snippet(c0.text), count: cut.length, detail: { by: describe(c0.clip, slide), px: c0.px } });
    }

    // over the footer
    var over = [];
    if (sourceBoxes.length) {
      texts.forEach(function (t) {
        if (t.source) return;
        if (t.rects.some(function (r) { return sourceBoxes.some(function (sb) { var i = intersect(r, sb); return i && i.width > TOLERANCE && i.height > TOLERANCE; }); })) over.push({ el: t.el, text: t.node.data });
      });
      boxes.forEach(function (b) {
        if (b.background || inSource(b.el) || isSourceAncestor(b.el)) return;
        if (over.some(function (o) { return b.el.contains(o.el); })) return;
        if (sourceBoxes.some(function (sb) { var i = intersect(b.rect, sb); return i && i.width > TOLERANCE && i.height > TOLERANCE; })) over.push({ el: b.el });
      });
    }
    // axe cannot decide the contrast of overlapped text: marked, so that its "needs review" is not a second report of this
    over.forEach(function (o) { o.el.setAttribute("data-svc-overlap", ""); });
    if (over.length) sources.forEach(function (s) { s.setAttribute("data-svc-overlap", ""); });
    if (over.length) findings.push({ code: "footer_overlap", element: describe(over[0].el, slide), text: over[0].text && snippet(over[0].text), count: over.length, detail: { footer: describe(sources[0], slide) } });

    // text over other text (the footer's own case is footer_overlap)
    var overlaps = [];
    for (var a = 0; a < texts.length; a++) {
      if (texts[a].source) continue;
      for (var b = a + 1; b < texts.length; b++) {
        if (texts[b].source) continue;
        var hit = false;
        for (var ra = 0; ra < texts[a].rects.length && !hit; ra++) {
          for (var rb = 0; rb < texts[b].rects.length && !hit; rb++) {
            var x = intersect(texts[a].rects[ra], texts[b].rects[rb]);
            // lines of one block may touch (tight line-height); real overlap covers a good part of a line
            if (x && x.width > 4 && x.height >= 0.3 * Math.min(texts[a].rects[ra].height, texts[b].rects[rb].height)) hit = true;
          }
        }
        if (hit) overlaps.push([texts[a], texts[b]]);
      }
    }
    overlaps.forEach(function (pair) { pair[0].el.setAttribute("data-svc-overlap", ""); pair[1].el.setAttribute("data-svc-overlap", ""); });
    if (overlaps.length) {
      var p = overlaps[0];
      findings.push({ code: "text_overlap", element: describe(p[1].el, slide), text: snippet(p[1].node.data), count: overlaps.length, detail: { other: describe(p[0].el, slide), otherText: snippet(p[0].node.data) } });
    }

    // small text, as rendered
    var small = [];
    var seen = new Set();
    texts.forEach(function (t) {
      if (seen.has(t.el)) return;
      seen.add(t.el);
      var size = parseFloat(getComputedStyle(t.el).fontSize);
      var scale = 1;
      if (t.el instanceof SVGElement) {
        var m = t.el.getScreenCTM && t.el.getScreenCTM();
        if (m) scale = Math.sqrt(Math.abs(m.a * m.d - m.b * m.c));
      } else {
        var r = t.el.getBoundingClientRect();
        if (t.el.offsetWidth > 0) scale = r.width / t.el.offsetWidth;
      }
      var px = size * scale;
      if (px < MIN_FONT_PX - 0.05) small.push({ el: t.el, text: t.node.data, px: Math.round(px * 10) / 10 });
    });
    if (small.length) {
      small.sort(function (x, y) { return x.px - y.px; });
      findings.push({ code: "small_text", element: describe(small[0].el, slide), text: snippet(small[0].text), count: small.length, detail: { px: small[0].px } });
    }

    // broken images: <img> that did not decode, CSS images whose file is missing
    var broken = [];
    Array.prototype.forEach.call(slide.querySelectorAll("img"), function (img) {
      var src = img.getAttribute("src") || "";
      if (!src.trim() || /^artifact:/i.test(src)) return;
      if (img.complete && img.naturalWidth > 0) return;
      var host = "";
      try { host = new URL(img.currentSrc || img.src, location.href).hostname; } catch (e) { host = ""; }
      if (host && host !== location.hostname && cdnHosts.indexOf(host) !== -1) return; // a public CDN is unreachable here, not broken
      broken.push({ el: img, src: src });
    });
    if (failed.size) {
      Array.prototype.forEach.call(slide.querySelectorAll("*"), function (el) {
        var bg = getComputedStyle(el).backgroundImage;
        if (!bg || bg === "none") return;
        var re = /url\("([^"]+)"\)/g, m;
        while ((m = re.exec(bg))) if (failed.has(m[1])) broken.push({ el: el, src: m[1].replace(location.origin + "/", "") });
      });
    }
    if (broken.length) findings.push({ code: "broken_image", element: describe(broken[0].el, slide), count: broken.length, detail: { src: broken[0].src } });

    return findings;
  });
})
