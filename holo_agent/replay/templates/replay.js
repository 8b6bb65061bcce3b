(function () {
  var steps = Array.prototype.slice.call(document.querySelectorAll('.step'));
  var thumbs = Array.prototype.slice.call(document.querySelectorAll('.thumb'));
  var current = -1;
  function centre(thumb) {
    // scroll the filmstrip alone (scrollIntoView would also scroll the page to it, and the
    // page must open at its top: title, outcome, evaluator)
    var bar = thumb.parentElement;
    if (!bar) return;
    bar.scrollLeft = thumb.offsetLeft - bar.offsetLeft - (bar.clientWidth - thumb.offsetWidth) / 2;
  }
  function go(i, scroll) {
    if (!steps.length) return;
    i = Math.max(0, Math.min(steps.length - 1, i));
    if (current >= 0) { steps[current].classList.remove('active');
      if (thumbs[current]) thumbs[current].classList.remove('active'); }
    current = i;
    steps[i].classList.add('active');
    if (thumbs[i]) { thumbs[i].classList.add('active'); centre(thumbs[i]); }
    document.body.setAttribute('data-current', String(i));
    if (scroll !== false) {
      var bar = document.querySelector('.filmstrip');
      var top = steps[i].getBoundingClientRect().top + window.scrollY
        - (bar ? bar.offsetHeight : 0) - 8;
      window.scrollTo({top: top, behavior: 'auto'});
    }
  }
  thumbs.forEach(function (t, i) { t.addEventListener('click', function () { go(i); }); });
  steps.forEach(function (s, i) { s.addEventListener('click', function () { go(i, false); }); });
  document.addEventListener('keydown', function (e) {
    if (e.target && /INPUT|TEXTAREA|SELECT/.test(e.target.tagName)) return;
    var next = ['j', 'ArrowDown', 'ArrowRight'], prev = ['k', 'ArrowUp', 'ArrowLeft'];
    if (next.indexOf(e.key) >= 0) { go(current + 1); e.preventDefault(); }
    else if (prev.indexOf(e.key) >= 0) { go(current - 1); e.preventDefault(); }
    else if (e.key === 'Home') { go(0); e.preventDefault(); }
    else if (e.key === 'End') { go(steps.length - 1); e.preventDefault(); }
  });
  go(0, false);
})();
