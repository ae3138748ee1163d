// Live data: one EventSource on api/events for the whole page, shared by
// every view, and the hooks views load their data with.
import { useState, useEffect, useRef, useCallback } from "./vendor/htm-preact.js";

const listeners = new Set();
const stateListeners = new Set();
let source = null;
let state = "connecting";
let wasClosed = false;

function setState(s) {
  if (s === state) return;
  state = s;
  for (const fn of stateListeners) fn(s);
}

function dispatch(name, data) {
  for (const fn of listeners) fn(name, data);
}

// connect opens the stream. The browser reconnects by itself (resuming with
// Last-Event-ID); a stream the server refused or ended for good is opened
// anew after a pause, and everything is refetched as after a reset.
function connect() {
  source = new EventSource("api/events");
  source.onopen = () => {
    setState("open");
    if (wasClosed) {
      wasClosed = false;
      dispatch("reset", {});
    }
  };
  source.onerror = () => {
    if (source.readyState === EventSource.CLOSED) {
      setState("closed");
      wasClosed = true;
      source = null;
      setTimeout(connect, 5000);
    } else {
      setState("connecting");
    }
  };
  for (const name of ["job", "resync", "reset", "log"]) {
    source.addEventListener(name, (e) => {
      let data = {};
      try { data = JSON.parse(e.data); } catch { /* an event without JSON data still counts */ }
      dispatch(name, data);
    });
  }
}

// useStreamState returns the stream's state: connecting, open or closed.
export function useStreamState() {
  const [s, set] = useState(state);
  useEffect(() => {
    stateListeners.add(set);
    if (!source && state !== "closed") connect();
    return () => stateListeners.delete(set);
  }, []);
  return s;
}

// useEvents calls onEvent(name, data) for each event of the stream while
// the component is mounted.
export function useEvents(onEvent) {
  const ref = useRef(onEvent);
  ref.current = onEvent;
  useEffect(() => {
    const fn = (name, data) => ref.current(name, data);
    listeners.add(fn);
    if (!source && state !== "closed") connect();
    return () => listeners.delete(fn);
  }, []);
}

// useResource loads data with load() when deps change, and again, at most
// once per `every` milliseconds, when relevant(name, data) says an event
// of the stream concerns it (resync and reset always do). A hidden page
// defers that reload until it is shown again. It keeps the last data while
// reloading, so views do not flicker, and drops answers that arrive out of
// order.
export function useResource(load, deps, relevant, every = 700) {
  const [res, setRes] = useState({ data: null, error: null, loading: true });
  const seq = useRef(0);
  const timer = useRef(null);
  const missed = useRef(false);
  const loadRef = useRef(load);
  loadRef.current = load;
  const reload = useCallback(() => {
    const n = ++seq.current;
    setRes((r) => ({ ...r, loading: true }));
    return loadRef.current().then(
      (data) => { if (n === seq.current) setRes({ data, error: null, loading: false }); },
      (error) => { if (n === seq.current) setRes((r) => ({ data: r.data, error, loading: false })); },
    );
  }, []);
  useEffect(() => {
    reload();
  }, deps);
  useEffect(() => {
    const shown = () => {
      if (!document.hidden && missed.current) {
        missed.current = false;
        reload();
      }
    };
    document.addEventListener("visibilitychange", shown);
    return () => {
      clearTimeout(timer.current);
      document.removeEventListener("visibilitychange", shown);
    };
  }, []);
  useEvents((name, data) => {
    if (!relevant) return;
    if (name !== "resync" && name !== "reset" && !relevant(name, data)) return;
    if (timer.current) return;
    timer.current = setTimeout(() => {
      timer.current = null;
      if (document.hidden) missed.current = true;
      else reload();
    }, every);
  });
  return { ...res, reload, setData: (data) => setRes((r) => ({ ...r, data })) };
}

let now = Date.now();
const clockListeners = new Set();
setInterval(() => {
  now = Date.now();
  for (const fn of clockListeners) fn(now);
}, 5000);

// useNow returns the time, updated every few seconds, for relative times.
export function useNow() {
  const [t, set] = useState(now);
  useEffect(() => {
    clockListeners.add(set);
    return () => clockListeners.delete(set);
  }, []);
  return t;
}
