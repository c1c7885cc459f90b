// Injected before the page's scripts (CDP Page.addScriptToEvaluateOnNewDocument).
window.__lt = []; window.__msg = []; window.__keys = [];
try { new PerformanceObserver((l) => { for (const e of l.getEntries()) window.__lt.push({ start: e.startTime, dur: e.duration }); })
  .observe({ type: 'longtask', buffered: true }); } catch (e) {}
(function () {
  const desc = Object.getOwnPropertyDescriptor(WebSocket.prototype, 'onmessage');
  Object.defineProperty(WebSocket.prototype, 'onmessage', {
    configurable: true,
    get() { return desc.get.call(this); },
    set(fn) {
      if (!fn) return desc.set.call(this, fn);
      desc.set.call(this, function (ev) {
        const t0 = performance.now();
        let type = '?'; try { type = ev.data.slice(9, 17); } catch (e) {}
        try { return fn.call(this, ev); } finally { window.__msg.push({ t: t0, dur: performance.now() - t0, type, bytes: ev.data.length }); }
      });
    },
  });
})();
// The page's animation-frame callbacks (it draws once a frame, session 31): how long each took, so a
// revision's cost is its message handler's and its share of a frame's.
window.__frames = [];
const pageFrame = window.requestAnimationFrame.bind(window);
window.requestAnimationFrame = (fn) => pageFrame((ts) => {
  const t0 = performance.now();
  try { return fn(ts); } finally { window.__frames.push({ t: t0, dur: performance.now() - t0 }); }
});
// Key-to-paint: from the input event's timestamp to the next frame after it (rAF then a task).
document.addEventListener('input', (e) => {
  const ts = e.timeStamp; const t0 = performance.now();
  pageFrame(() => { const ch = new MessageChannel(); ch.port1.onmessage = () => window.__keys.push({ ts, handlerStart: t0, paint: performance.now(), lat: performance.now() - ts }); ch.port2.postMessage(0); });
}, true);
