// Moves the durations the dashboard shows of running tasks: each <time class="tick" datetime="…">
// counts up from its start, once a second, as Go writes a duration (1h2m3s).
(function () {
  function words(secs) {
    var h = Math.floor(secs / 3600), m = Math.floor(secs % 3600 / 60), s = secs % 60;
    if (h > 0) return h + "h" + m + "m" + s + "s";
    if (m > 0) return m + "m" + s + "s";
    return s + "s";
  }
  function tick() {
    var els = document.querySelectorAll("time.tick[datetime]");
    for (var i = 0; i < els.length; i++) {
      var start = Date.parse(els[i].getAttribute("datetime"));
      if (!isNaN(start)) els[i].textContent = words(Math.max(0, Math.floor((Date.now() - start) / 1000)));
    }
  }
  tick();
  setInterval(tick, 1000);
})();
