// rsocket-js 0.0.x (npm rsocket-core, rsocket-flowable and the rsocket-tcp-*/rsocket-websocket-*
// transports, 0.0.27) as a peer of the suite, through the library's public API only: RSocketServer
// with a request handler that runs the profile's test service, RSocketClient for the client-role
// cases (rsocket_js_common.js). Payloads are Buffers (BufferEncoders).
//
//   node rsocket_js0_peer.js server --transport tcp|ws --port PORT
//   node rsocket_js0_peer.js client --url tcp://127.0.0.1:PORT|ws://127.0.0.1:PORT/ --testcase NAME
"use strict";

const { RSocketClient, RSocketServer, BufferEncoders } = require("rsocket-core");
const { Flowable, Single } = require("rsocket-flowable");
const RSocketTCPServer = require("rsocket-tcp-server").default;
const RSocketTcpClient = require("rsocket-tcp-client").default;
const RSocketWebSocketServer = require("rsocket-websocket-server").default;
const RSocketWebSocketClient = require("rsocket-websocket-client").default;
const WebSocket = require("ws");
const common = require("./rsocket_js_common");

const LABEL = "rsocket-js 0.0 peer";

function answer(value) {
  return new Single((subscriber) => {
    subscriber.onSubscribe(() => {});
    if (value instanceof Error) subscriber.onError(value);
    else if (value !== undefined) subscriber.onComplete(value);
  });
}

function requestResponse(payload) {
  const { name, arg } = common.route(payload.data);
  if (name === "echo") return answer({ data: payload.data.subarray(5), metadata: payload.metadata });
  if (name === "error") return answer(new Error(arg));
  if (name === "last-fnf") return answer({ data: common.kept.fnf });
  if (name === "last-metadata-push") return answer({ data: common.kept.metadataPush });
  if (name === "never") return answer(undefined);
  return answer(new Error("unknown route"));
}

function requestStream(payload) {
  const { name, arg } = common.route(payload.data);
  const end = name === "range" ? common.rangeCount(arg) : null;
  return new Flowable((subscriber) => {
    const state = { next: 0, done: false };
    subscriber.onSubscribe({
      request(n) {
        for (; n > 0 && !state.done && state.next < end; n -= 1, state.next += 1) {
          subscriber.onNext({ data: Buffer.from(String(state.next)) });
        }
        if (!state.done && state.next === end) {
          state.done = true;
          subscriber.onComplete();
        }
      },
      cancel() {
        state.done = true;
      },
    });
    if (name === "error") subscriber.onError(new Error(arg));
    else if (end === null && name !== "never") subscriber.onError(new Error("unknown route"));
    else if (end === 0) subscriber.onComplete();
  });
}

// Echoes every payload of the channel (the initial one first), asking the requester for as many
// as the requester asked of it: its credit passes straight through.
function requestChannel(payloads) {
  return new Flowable((subscriber) => {
    let inbound = null;
    // Subscribed first: the library asks for the requester's initial credit as soon as it subscribes.
    payloads.subscribe({
      onSubscribe(subscription) {
        inbound = subscription;
      },
      onNext(item) {
        subscriber.onNext({ data: item.data, metadata: item.metadata });
      },
      onComplete: () => subscriber.onComplete(),
      onError: (err) => subscriber.onError(err),
    });
    subscriber.onSubscribe({
      request: (n) => inbound.request(n),
      cancel: () => inbound.cancel(),
    });
  });
}

const service = {
  requestResponse,
  requestStream,
  requestChannel,
  fireAndForget(payload) {
    if (common.route(payload.data).name === "fnf") common.kept.fnf = Buffer.from(payload.data.subarray(4));
  },
  metadataPush(payload) {
    common.kept.metadataPush = Buffer.from(payload.metadata || []);
    return answer({ data: null });
  },
};

function serve(options) {
  const port = Number(options.port);
  const transport = options.transport === "ws"
    ? new RSocketWebSocketServer({ host: "127.0.0.1", port }, BufferEncoders)
    : new RSocketTCPServer({ host: "127.0.0.1", port }, BufferEncoders);
  const server = new RSocketServer({
    getRequestHandler: () => service,
    transport,
    errorHandler: (err) => console.log(`${LABEL}: ${err && err.message}`),
  });
  server.start();
  console.log(`${LABEL}: serving the test service on ${options.transport || "tcp"} 127.0.0.1:${port}`);
}

function single(source) {
  return new Promise((resolve, reject) => {
    source.subscribe({ onComplete: resolve, onError: reject, onSubscribe() {} });
  });
}

// The promise-based view of a connected ReactiveSocket that the cases of rsocket_js_common.js use.
function socketView(socket, client) {
  return {
    requestResponse: (data, metadata) => single(socket.requestResponse({ data, metadata })),
    requestStream: (data, batch) => new Promise((resolve, reject) => {
      const items = [];
      let subscription = null;
      socket.requestStream({ data }).subscribe({
        onSubscribe(s) {
          subscription = s;
          s.request(batch);
        },
        onNext(payload) {
          items.push(payload.data);
          if (items.length % batch === 0) subscription.request(batch);
        },
        onComplete: () => resolve(items),
        onError: reject,
      });
    }),
    requestChannel: (datas, batch) => new Promise((resolve, reject) => {
      const items = [];
      let subscription = null;
      const outbound = new Flowable((subscriber) => {
        let sent = 0;
        subscriber.onSubscribe({
          request(n) {
            for (; n > 0 && sent < datas.length; n -= 1, sent += 1) subscriber.onNext({ data: datas[sent] });
            if (sent === datas.length) {
              sent += 1;
              subscriber.onComplete();
            }
          },
          cancel() {},
        });
      });
      socket.requestChannel(outbound).subscribe({
        onSubscribe(s) {
          subscription = s;
          s.request(batch);
        },
        onNext(payload) {
          items.push(payload.data);
          if (items.length % batch === 0) subscription.request(batch);
        },
        onComplete: () => resolve(items),
        onError: reject,
      });
    }),
    fireAndForget: async (data) => socket.fireAndForget({ data }),
    metadataPush: (metadata) => single(socket.metadataPush({ metadata })),
    close: () => client.close(),
  };
}

function connect(url) {
  const { scheme, host, port } = common.splitUrl(url);
  const transport = scheme === "ws"
    ? new RSocketWebSocketClient({ url, wsCreator: (address) => new WebSocket(address) }, BufferEncoders)
    : new RSocketTcpClient({ host, port }, BufferEncoders);
  const client = new RSocketClient({
    setup: { dataMimeType: "text/plain", metadataMimeType: "text/plain", keepAlive: 10000, lifetime: 30000 },
    transport,
  });
  return single(client.connect()).then((socket) => socketView(socket, client));
}

const options = common.parseArgs(process.argv.slice(2));
if (options.role === "server") {
  common.exitOnSignals(LABEL);
  serve(options);
} else if (options.role === "client") {
  // rsocket-js 0.0.x does not fragment what it sends: no "fragmented" case.
  common.runClient(options.testcase, () => connect(options.url), { label: LABEL, fragments: false });
} else {
  console.log(`${LABEL}: usage: server --transport tcp|ws --port PORT | client --url URL --testcase NAME`);
  process.exit(2);
}
