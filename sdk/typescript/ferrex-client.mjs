// A client for ferrex's HTTP API: no dependencies, the platform's fetch (Node 20+).
// Its types are in ferrex-client.d.mts.
//
//   import { Client } from "ferrex-client";
//   const client = new Client("http://127.0.0.1:8765", process.env.FERREX_TOKEN);
//   const stored = await client.store("On 2026-11-02 Ana deployed api-server v2.3");
//   const found = await client.recall("who deployed api-server?", { limit: 3 });
//   const page = await client.list({ tag: ["deploy"], limit: 20 });  // then page.next_cursor
//   await client.history(stored.id); await client.entity("Ana"); await client.tags();
//   for await (const change of client.changes({ after: 0, untilIdle: true })) { ... }
//
// Writes (store, storeMany, forget, confirm) send an Idempotency-Key made once per call and
// sent again on each retry, so a write retried after a lost answer is done once. A request
// is retried when fetch fails (the connection) or the server answers 503; any other answer
// is final. Errors are FerrexError with the server's code, message and hint.
//
// The token goes to the configured address only: no redirect is followed (an answer that
// redirects is a FerrexError "redirected"; a ferrex server never redirects its API), a token
// holding a line break or another control character is refused ("bad_token"), and so is a
// token sent over plain http:// to a host that is not this machine ("insecure_url"; use
// https://, or pass { allowInsecureHttp: true } for a network you trust).

const RETRY_STATUSES = new Set([503]);

export class FerrexError extends Error {
  constructor(code, message, hint = null, status = null, details = {}) {
    super(message);
    this.name = "FerrexError";
    this.code = code;
    this.hint = hint;
    this.status = status;
    this.details = details;
  }
}

function isLoopback(hostname) {
  const host = hostname.replace(/^\[|\]$/g, "").toLowerCase();
  if (host === "localhost" || host === "localhost." || host === "::1") return true;
  const octets = host.split(".");
  return octets.length === 4 && octets[0] === "127" && octets.every((o) => /^\d{1,3}$/.test(o));
}

function checked(url, token, allowInsecureHttp) {
  let parsed;
  try {
    parsed = new URL(String(url));
  } catch {
    parsed = null;
  }
  if (!parsed || (parsed.protocol !== "http:" && parsed.protocol !== "https:") || !parsed.hostname) {
    throw new FerrexError("bad_url", `${JSON.stringify(String(url))} is not an http:// or https:// address`,
      "for example http://127.0.0.1:8765");
  }
  if (token) {
    if (/[\x00-\x1f\x7f]/.test(String(token))) {
      throw new FerrexError("bad_token", "the token holds a line break or another control character",
        "copy the token again, without its line end");
    }
    if (parsed.protocol === "http:" && !isLoopback(parsed.hostname) && !allowInsecureHttp) {
      throw new FerrexError(
        "insecure_url",
        `the token would be sent in clear text over http:// to ${parsed.hostname}, which is not this machine`,
        "use https:// (a TLS proxy in front of ferrex), or pass { allowInsecureHttp: true } on a network you trust",
      );
    }
  }
  return String(url).replace(/\/+$/, "");
}

export class Client {
  constructor(url, token = null, options = {}) {
    this.url = checked(url, token, options.allowInsecureHttp ?? false);
    this.token = token;
    this.timeout = options.timeout ?? 60_000;
    this.retries = options.retries ?? 2;
    this.backoff = options.backoff ?? 500;
    this.fetch = options.fetch ?? globalThis.fetch;
  }

  store(memory, options = {}) {
    const body = typeof memory === "string" ? { content: memory } : { ...memory };
    return this.#write("POST", "/api/v1/memories", body, options.idempotencyKey);
  }

  storeMany(memories, options = {}) {
    const body = { memories: memories.map((m) => ({ ...m })) };
    return this.#write("POST", "/api/v1/memories", body, options.idempotencyKey);
  }

  recall(query, options = {}) {
    return this.#request("POST", "/api/v1/recall", { query, ...options }, null);
  }

  forget(id, options = {}) {
    let path = `/api/v1/memories/${encodeURIComponent(id)}`;
    if (options.cascade) path += "?cascade=true";
    return this.#write("DELETE", path, null, options.idempotencyKey);
  }

  confirm(ids, options = {}) {
    const body = { ids: [...ids] };
    if (options.pinned !== undefined) body.pinned = options.pinned;
    if (options.importance !== undefined) body.importance = options.importance;
    return this.#write("POST", "/api/v1/confirm", body, options.idempotencyKey);
  }

  stats(options = {}) {
    const query = options.namespace
      ? `?${new URLSearchParams({ namespace: options.namespace })}`
      : "";
    return this.#request("GET", `/api/v1/stats${query}`, null, null);
  }

  reflect(options = {}) {
    const params = new URLSearchParams();
    if (options.namespace) params.set("namespace", options.namespace);
    if (options.limit !== undefined) params.set("limit", String(options.limit));
    const query = params.size ? `?${params}` : "";
    return this.#request("GET", `/api/v1/reflect${query}`, null, null);
  }

  // One page of memories: { memories, next_cursor }; pass next_cursor back as cursor.
  list(options = {}) {
    return this.#request("GET", `/api/v1/memories${query(options)}`, null, null);
  }

  memory(id) {
    return this.#request("GET", `/api/v1/memory/${encodeURIComponent(id)}`, null, null);
  }

  // A memory's versions, oldest first.
  history(id) {
    return this.#request("GET", `/api/v1/history/${encodeURIComponent(id)}`, null, null);
  }

  // The entity names the caller may see, a page at a time, optionally by prefix.
  entities(options = {}) {
    const { prefix, offset } = options;
    return this.#request("GET", `/api/v1/entities${query({ prefix, offset })}`, null, null);
  }

  // One entity by any spelling: its spellings, its memories, its neighbours.
  entity(name, options = {}) {
    const params = query({ name, offset: options.offset });
    return this.#request("GET", `/api/v1/entities${params}`, null, null);
  }

  // The tags (values of a context key, "tags" by default) with how many memories hold each.
  tags(options = {}) {
    return this.#request("GET", `/api/v1/tags${query(options)}`, null, null);
  }

  // The change stream: an async iterator of change events (each journal record that changed
  // memories the caller sees). after: from this position (default: from now on); untilIdle:
  // end once caught up; otherwise it runs until the loop breaks (or signal aborts),
  // reconnecting after a lost connection from the last position read (Last-Event-ID).
  async *changes(options = {}) {
    let position = options.after ?? null;
    const untilIdle = options.untilIdle ?? false;
    const reconnect = (options.reconnect ?? true) && !untilIdle;
    for (let attempt = 0; ; ) {
      const headers = { Accept: "text/event-stream" };
      if (this.token) headers.Authorization = `Bearer ${this.token}`;
      if (position !== null) headers["Last-Event-ID"] = String(position);
      const path = `/api/v1/changes${untilIdle ? "?until_idle=true" : ""}`;
      let response;
      try {
        response = await this.fetch(this.url + path, {
          headers, redirect: "manual", signal: options.signal,
        });
      } catch (cause) {
        if (!reconnect || options.signal?.aborted) {
          const error = new FerrexError("connection_failed", `GET ${this.url}${path} failed: ${cause?.cause?.code ?? cause?.message ?? cause}`);
          error.cause = cause;
          throw error;
        }
        await sleep(Math.min(this.backoff * 2 ** attempt++, 30_000));
        continue;
      }
      if (response.status !== 200) throw errorOf(await response.text(), response.status);
      try {
        for await (const event of events(response.body)) {
          attempt = 0;
          if (/^\d+$/.test(event.id ?? "")) position = Number(event.id);
          if (event.name === "change") yield JSON.parse(event.data);
          else if (event.name === "error") throw errorOf(event.data, 200);
        }
      } catch (cause) {
        if (cause instanceof FerrexError || !reconnect || options.signal?.aborted) throw cause;
      }
      if (!reconnect) return;
      await sleep(Math.min(this.backoff * 2 ** attempt++, 30_000));
    }
  }

  #write(method, path, body, key) {
    return this.#request(method, path, body, key ?? globalThis.crypto.randomUUID());
  }

  async #request(method, path, body, key) {
    const headers = { Accept: "application/json" };
    if (this.token) headers.Authorization = `Bearer ${this.token}`;
    if (key) headers["Idempotency-Key"] = key;
    if (body !== null) headers["Content-Type"] = "application/json";
    for (let attempt = 0; ; attempt++) {
      let response;
      try {
        response = await this.fetch(this.url + path, {
          method,
          headers,
          body: body === null ? undefined : JSON.stringify(body),
          signal: AbortSignal.timeout(this.timeout),
          redirect: "manual",
        });
      } catch (cause) {
        if (attempt >= this.retries) {
          const error = new FerrexError(
            "connection_failed",
            `${method} ${this.url}${path} failed: ${cause?.cause?.code ?? cause?.message ?? cause}`,
            "is the server running (ferrex serve --http HOST:PORT)?",
          );
          error.cause = cause;
          throw error;
        }
        await sleep(this.backoff * 2 ** attempt);
        continue;
      }
      if (response.type === "opaqueredirect" || (response.status >= 300 && response.status < 400)) {
        const to = response.headers.get("location") ?? "another address";
        throw new FerrexError(
          "redirected",
          `${method} ${this.url}${path} was answered ${response.status} with a redirect to ${to}; the client follows no redirect, so the token is not sent there`,
          "give the client the server's own address (a ferrex server never redirects its API)",
          response.status,
        );
      }
      const text = await response.text();
      if (response.ok) return parse(text, response.status);
      if (!RETRY_STATUSES.has(response.status) || attempt >= this.retries) {
        throw errorOf(text, response.status);
      }
      await sleep(this.backoff * 2 ** attempt);
    }
  }
}

function query(options) {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(options)) {
    if (value === undefined || value === null) continue;
    if (Array.isArray(value)) for (const item of value) params.append(name, String(item));
    else params.set(name, String(value));
  }
  return params.size ? `?${params}` : "";
}

// The events of a text/event-stream body: { name, id, data } as they arrive.
async function* events(body) {
  const decoder = new TextDecoder();
  let buffer = "";
  let name = "message";
  let id = null;
  let data = [];
  for await (const chunk of body) {
    buffer += decoder.decode(chunk, { stream: true });
    let end;
    while ((end = buffer.search(/\r\n|\n|\r/)) >= 0) {
      const line = buffer.slice(0, end);
      buffer = buffer.slice(end + (buffer.startsWith("\r\n", end) ? 2 : 1));
      if (line === "") {
        if (data.length) yield { name, id, data: data.join("\n") };
        name = "message";
        data = [];
        continue;
      }
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? "" : line.slice(colon + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      if (field === "event") name = value;
      else if (field === "data") data.push(value);
      else if (field === "id") id = value;
    }
  }
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function parse(text, status) {
  let doc;
  try {
    doc = JSON.parse(text);
  } catch {
    throw new FerrexError("bad_answer", `the server's answer (${status}) is not JSON`);
  }
  if (doc === null || typeof doc !== "object" || Array.isArray(doc)) {
    throw new FerrexError("bad_answer", `the server's answer (${status}) is not an object`);
  }
  return doc;
}

function errorOf(text, status) {
  let error;
  try {
    error = JSON.parse(text).error;
  } catch {
    error = undefined;
  }
  if (!error || typeof error.code !== "string" || typeof error.message !== "string") {
    return new FerrexError("http_error", `HTTP ${status}: ${text.slice(0, 200)}`, null, status);
  }
  const { code, message, hint, kind, ...details } = error;
  return new FerrexError(code, message, typeof hint === "string" ? hint : null, status, details);
}
