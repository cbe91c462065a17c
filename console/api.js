// The console's only way to the scheduler: the REST API with the bearer token the
// user gave (kept in sessionStorage, for this tab only), and the event stream.

const KEY = 'tessel.token';

export function token() {
  return sessionStorage.getItem(KEY) || '';
}

export function setToken(t) {
  if (t) sessionStorage.setItem(KEY, t);
  else sessionStorage.removeItem(KEY);
}

function headers(extra = {}) {
  const h = { Accept: 'application/json', ...extra };
  const t = token();
  if (t) h.Authorization = `Bearer ${t}`;
  return h;
}

// Thrown for any answer but 2xx; `status` 401 means the token was refused.
export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

async function check(res) {
  if (res.ok) return res;
  let message = `${res.status} ${res.statusText}`;
  try {
    const body = await res.json();
    if (body && body.error && body.error.message) message = body.error.message;
  } catch {
    // Not JSON: keep the status line.
  }
  throw new ApiError(res.status, message);
}

export async function get(path) {
  const res = await fetch(path, { headers: headers(), cache: 'no-store' });
  return (await check(res)).json();
}

export async function post(path, body = {}) {
  const res = await fetch(path, {
    method: 'POST',
    headers: headers({ 'Content-Type': 'application/json' }),
    body: JSON.stringify(body),
  });
  return (await check(res)).json();
}

// Streams a text body (a followed log) to `onText` until it ends or `signal` aborts.
export async function stream(path, onText, signal) {
  const res = await check(await fetch(path, { headers: headers({ Accept: '*/*' }), signal }));
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    onText(decoder.decode(value, { stream: true }));
  }
}

// Follows GET /v1/events (server-sent events, read with fetch since EventSource
// cannot send a token): `onChange(counters)` for each event, `onState(live)` when
// the stream opens or drops. Reconnects after a drop, waiting longer each time
// (up to 10 s). Returns a function that stops it.
export function followEvents(onChange, onState) {
  let stopped = false;
  let controller = null;
  let wait = 500;
  const run = async () => {
    while (!stopped) {
      controller = new AbortController();
      try {
        const res = await check(
          await fetch('/v1/events', { headers: headers({ Accept: 'text/event-stream' }), signal: controller.signal }));
        onState(true);
        wait = 500;
        const reader = res.body.getReader();
        const decoder = new TextDecoder();
        let buf = '';
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += decoder.decode(value, { stream: true });
          let end;
          while ((end = buf.indexOf('\n\n')) >= 0) {
            const block = buf.slice(0, end);
            buf = buf.slice(end + 2);
            const data = block.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5)).join('\n');
            if (data) onChange(JSON.parse(data));
          }
        }
      } catch (e) {
        if (e instanceof ApiError && e.status === 401) {
          onState(false, e);
          return;
        }
      }
      if (stopped) return;
      onState(false);
      await new Promise((r) => setTimeout(r, wait));
      wait = Math.min(wait * 2, 10000);
    }
  };
  run();
  return () => {
    stopped = true;
    if (controller) controller.abort();
  };
}
