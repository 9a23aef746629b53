// What the two rsocket-js peers (rsocket_js0_peer.js, rsocket_js1_peer.js) share: the command
// line, the test service's routes (docs/profiles/rsocket.md, "Test service") and the client-role
// cases, written against a small promise-based view of a connected RSocket that each peer builds
// from its own library's public API. Nothing here touches the wire.
"use strict";

const UNSUPPORTED = 127;

// argv: server --transport tcp|ws --port N  |  client --url URL --testcase NAME
function parseArgs(argv) {
  const [role, ...rest] = argv;
  const options = { role };
  for (let i = 0; i + 1 < rest.length; i += 2) options[rest[i].replace(/^--/, "")] = rest[i + 1];
  return options;
}

// The route of a request: its data (or routing tag, see routeSource) as UTF-8.
function route(data) {
  const text = data ? data.toString("utf8") : "";
  for (const prefix of ["echo:", "error:", "range:", "fnf:"]) {
    if (text.startsWith(prefix)) return { name: prefix.slice(0, -1), arg: text.slice(prefix.length) };
  }
  if (["never", "last-fnf", "last-metadata-push"].includes(text)) return { name: text, arg: "" };
  return { name: "unknown", arg: text };
}

const COMPOSITE_MIME = "message/x.rsocket.composite-metadata.v0";
const ROUTING_MIME = "message/x.rsocket.routing.v0";
const ROUTING_ID = 0x7e;

// The first routing tag of composite metadata (Extensions/CompositeMetadata.md, Routing.md), or
// null: with composite metadata negotiated, the test service routes by it instead of the data.
function routingTag(metadata) {
  if (!metadata) return null;
  try {
    let pos = 0;
    while (pos < metadata.length) {
      const head = metadata[pos];
      pos += 1;
      let mime;
      if (head & 0x80) {
        mime = (head & 0x7f) === ROUTING_ID ? ROUTING_MIME : head & 0x7f;
      } else {
        mime = metadata.subarray(pos, pos + head + 1).toString("ascii");
        pos += head + 1;
      }
      const length = metadata.readUIntBE(pos, 3);
      pos += 3;
      const entry = metadata.subarray(pos, pos + length);
      pos += length;
      if (mime === ROUTING_MIME && entry.length > 0) return entry.subarray(1, 1 + entry[0]);
    }
  } catch (err) {
    return null; // malformed composite metadata: no route from it
  }
  return null;
}

// What the test service routes a request by: its routing tag when composite metadata was negotiated, else its data.
function routeSource(payload, compositeNegotiated) {
  const tag = compositeNegotiated ? routingTag(payload.metadata) : null;
  return tag !== null ? tag : payload.data;
}

// The kept fire-and-forget and METADATA_PUSH values, shared by every connection of one server.
const kept = { fnf: Buffer.alloc(0), metadataPush: Buffer.alloc(0) };

function rangeCount(arg) {
  return /^[0-9]+$/.test(arg) ? Number(arg) : null;
}

function withDeadline(promise, ms, what) {
  let timer;
  const deadline = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

function check(condition, message) {
  if (!condition) throw new Error(`check failed: ${message}`);
}

const text = (buffer) => (buffer ? Buffer.from(buffer).toString("utf8") : "");

const settle = () => new Promise((resolve) => setTimeout(resolve, 300)); // let a written frame leave

const FRAGMENTED_SIZE = 40000; // a data field many times the fragment size the peers configure
const FRAGMENT_SIZE = 1024;

// Client test cases: request-response, stream, fnf and metadata-push as docs/profiles/rsocket.md
// says; channel and fragmented (names the profile reserves) as the interop matrix reads them
// (reference_impl/rsocket/client_cases.py). SOCKET: requestResponse(data, metadata) -> {data,
// metadata}, requestStream(data, batch) -> [data...], requestChannel([data...], n) -> [data...],
// fireAndForget(data), metadataPush(metadata); a stream ERROR rejects.
const CASES = {
  "request-response": async (socket) => {
    const answer = await socket.requestResponse(Buffer.from("echo:hello"));
    check(text(answer.data) === "hello", `echo:hello answered ${JSON.stringify(text(answer.data))}`);
  },
  stream: async (socket) => {
    const items = (await socket.requestStream(Buffer.from("range:5"), 2)).map(text);
    check(items.join(",") === "0,1,2,3,4", `range:5 in batches of 2 gave [${items}]`);
  },
  fnf: async (socket) => {
    await socket.fireAndForget(Buffer.from("fnf:client"));
    await settle();
  },
  "metadata-push": async (socket) => {
    socket.metadataPush(Buffer.from("client-metadata")).catch(() => {}); // nothing answers it
    await settle();
  },
  channel: async (socket) => {
    // the empty one still carries N ("0 length data can be considered a valid PAYLOAD")
    const sent = ["a", "", "c", "d"];
    const items = (await socket.requestChannel(sent.map((s) => Buffer.from(s)), 2)).map(text);
    check(JSON.stringify(items) === JSON.stringify(sent), `the channel echoed ${JSON.stringify(items)} for ${JSON.stringify(sent)}`);
  },
  fragmented: async (socket) => {
    const body = "x".repeat(FRAGMENTED_SIZE);
    const answer = await socket.requestResponse(Buffer.from(`echo:${body}`), Buffer.from("m".repeat(3000)));
    check(text(answer.data) === body, `a ${FRAGMENTED_SIZE}-byte echo came back as ${answer.data && answer.data.length} bytes`);
    check(text(answer.metadata) === "m".repeat(3000), "the fragmented echo's metadata differs");
  },
};

// Runs case NAME with a socket from CONNECT(fragmentSize) and ends the process with the contract's
// exit code: 0 done, 127 unsupported, 1 failed.
async function runClient(name, connect, { label, fragments, unsupported = [] }) {
  const run = CASES[name];
  if (!run || (name === "fragmented" && !fragments) || unsupported.includes(name)) {
    console.log(`${label}: unsupported test case ${JSON.stringify(name)}`);
    process.exit(UNSUPPORTED);
  }
  try {
    const socket = await withDeadline(connect(name === "fragmented" ? FRAGMENT_SIZE : 0), 10000, "connect");
    await withDeadline(run(socket), 20000, name);
    socket.close();
    console.log(`${label}: ${name}: OK`);
    process.exit(0);
  } catch (err) {
    console.log(`${label}: ${name}: FAILED: ${err && err.stack ? err.stack : err}`);
    process.exit(1);
  }
}

// The server runs until SIGTERM; as PID 1 of its container it must handle the signal itself.
function exitOnSignals(label) {
  for (const signal of ["SIGTERM", "SIGINT"]) {
    process.on(signal, () => {
      console.log(`${label}: ${signal}, exiting`);
      process.exit(0);
    });
  }
}

function splitUrl(url) {
  const parsed = new URL(url);
  return { scheme: parsed.protocol.replace(":", ""), host: parsed.hostname, port: Number(parsed.port) };
}

module.exports = {
  UNSUPPORTED, COMPOSITE_MIME, parseArgs, route, routeSource, kept, rangeCount, runClient, exitOnSignals, splitUrl,
  text,
};
