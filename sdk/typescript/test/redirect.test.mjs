// The client keeps its token to the configured address: no redirect followed, no token in
// clear text to another machine, no control character in a token. Runs without ferrex: two
// loopback servers, one redirecting to the other, which records what reaches it.
import assert from "node:assert/strict";
import http from "node:http";
import { test } from "node:test";

import { Client, FerrexError } from "../ferrex-client.mjs";

function listen(host, handler) {
  return new Promise((resolve) => {
    const server = http.createServer(handler);
    server.listen(0, host, () => resolve(server));
  });
}

async function refused(promiseOrFn) {
  try {
    await (typeof promiseOrFn === "function" ? promiseOrFn() : promiseOrFn);
  } catch (error) {
    assert.ok(error instanceof FerrexError, String(error));
    return error;
  }
  assert.fail("expected a FerrexError");
}

for (const code of [301, 302, 303, 307, 308]) {
  test(`a ${code} redirect is refused and nothing reaches the other host`, async () => {
    const seen = [];
    const other = await listen("127.0.0.2", (req, res) => {
      seen.push([req.method, req.headers.authorization ?? null]);
      res.setHeader("Content-Type", "application/json");
      res.end('{"status": "stored", "id": "mem_FROM_ANOTHER_HOST"}');
    });
    const target = `http://127.0.0.2:${other.address().port}`;
    const redirector = await listen("127.0.0.1", (req, res) => {
      req.resume();
      res.statusCode = code;
      res.setHeader("Location", target + req.url);
      res.end();
    });
    try {
      const client = new Client(`http://127.0.0.1:${redirector.address().port}`, "secret-token-123", {
        retries: 0,
      });
      for (const call of [() => client.stats(), () => client.store("A note"), () => client.forget("mem_X")]) {
        const error = await refused(call);
        assert.equal(error.code, "redirected");
        assert.equal(error.status, code);
        assert.ok(error.message.includes(target), error.message);
      }
      assert.deepEqual(seen, []);
    } finally {
      redirector.close();
      other.close();
    }
  });
}

test("a token is not sent in clear text to another machine", async () => {
  for (const url of ["http://10.1.2.3:8765", "http://memory.example.com", "http://[2001:db8::1]:8765"]) {
    const error = await refused(() => new Client(url, "secret-token-123"));
    assert.equal(error.code, "insecure_url");
    assert.ok(error.hint.includes("https://"));
    new Client(url, "secret-token-123", { allowInsecureHttp: true });
    new Client(url.replace("http://", "https://"), "secret-token-123");
    new Client(url);
  }
  for (const url of ["http://127.0.0.1:8765", "http://localhost:8765", "http://[::1]:8765", "http://127.3.4.5:1"]) {
    new Client(url, "secret-token-123");
  }
});

test("a token with a control character, or an address that is not http, is refused", async () => {
  for (const token of ["abc\r\nX-Injected: 1", "abc\n", "a\tb", "a\u0000b"]) {
    const error = await refused(() => new Client("http://127.0.0.1:8765", token));
    assert.equal(error.code, "bad_token");
    assert.ok(!error.message.includes(token));
  }
  for (const url of ["ftp://127.0.0.1", "127.0.0.1:8765", "http://"]) {
    const error = await refused(() => new Client(url, "t"));
    assert.equal(error.code, "bad_url");
  }
});
