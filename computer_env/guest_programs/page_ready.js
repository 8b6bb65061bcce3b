// Run in a page through Chrome's DevTools (Runtime.evaluate, awaitPromise) by ready_probe.py's
// `page` mode: its load state, whether it drew a frame (two animation frames passed), has
// visible content (text or a replaced element in the viewport), its background colour ('': an
// image) and where its viewport is (window position, outer and inner sizes).
new Promise(function (done) {
  function look(frame) {
    var vw = innerWidth, vh = innerHeight, content = false, els = [document.body], bg = null;
    if (document.body) { els = els.concat(Array.prototype.slice.call(
      document.body.getElementsByTagName('*'), 0, 4000)); }
    for (var i = 0; i < els.length && !content; i++) {
      var el = els[i], own = /^(IMG|CANVAS|SVG|VIDEO|INPUT|TEXTAREA|SELECT|BUTTON|IFRAME)$/i;
      if (!el) continue;
      var text = false;
      for (var c = el.firstChild; c && !text; c = c.nextSibling) {
        text = c.nodeType === 3 && /\S/.test(c.nodeValue); }
      if (!text && !own.test(el.tagName)) continue;
      var r = el.getBoundingClientRect();
      content = r.width > 0 && r.height > 0 && r.bottom > 0 && r.right > 0 && r.top < vh &&
        r.left < vw && getComputedStyle(el).visibility === 'visible';
    }
    var roots = [document.documentElement, document.body];
    for (var k = 0; k < 2 && bg === null; k++) {
      var st = roots[k] && getComputedStyle(roots[k]);
      if (!st) continue;
      if (st.backgroundImage !== 'none') { bg = ''; break; }
      if (!/^(transparent|rgba\(.*, 0\))$/.test(st.backgroundColor)) bg = st.backgroundColor;
    }
    return {url: location.href, title: document.title, ready: document.readyState,
      visible: document.visibilityState, frame: frame, content: content, bg: bg,
      fcp: performance.getEntriesByName('first-contentful-paint').length > 0,
      x: screenX, y: screenY, ow: outerWidth, oh: outerHeight, iw: vw, ih: vh,
      dpr: devicePixelRatio};
  }
  if (document.visibilityState !== 'visible') { done(look(false)); return; }
  var t = setTimeout(function () { done(look(false)); }, 2000);
  requestAnimationFrame(function () { requestAnimationFrame(function () {
    clearTimeout(t); done(look(true)); }); });
})
