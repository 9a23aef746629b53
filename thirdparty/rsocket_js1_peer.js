// rsocket-js 1.0 (npm rsocket-core and its transports, 1.0.0-alpha.3) as a peer of the suite,
// through the library's public API only: RSocketServer with an acceptor that runs the profile's
// test service, RSocketConnector for the client-role cases (rsocket_js_common.js).
//
//   node rsocket_js1_peer.js server --transport tcp|ws --port PORT [--resume SESSION_MS]
//   node rsocket_js1_peer.js client --url tcp://127.0.0.1:PORT|ws://127.0.0.1:PORT/ --testcase NAME
"use strict";

const { RSocketServer, RSocketConnector, RSocketError, ErrorCodes } = require("rsocket-core");
const { TcpServerTransport } = require("rsocket-tcp-server");
const { TcpClientTransport } = require("rsocket-tcp-client");
const { WebsocketServerTransport } = require("rsocket-websocket-server");
const { WebsocketClientTransport } = require("rsocket-websocket-client");
const WebSocket = require("ws");
const common = require("./rsocket_js_common");

const LABEL = "rsocket-js 1.0 peer";
const noExtension = () => {};

function requestResponse(payload, responder, composite) {
  const source = common.routeSource(payload, composite);
  const { name, arg } = common.route(source);
  if (name === "echo") responder.onNext({ data: source.subarray(5), metadata: payload.metadata }, true);
  else if (name === "error") responder.onError(new RSocketError(ErrorCodes.APPLICATION_ERROR, arg));
  else if (name === "last-fnf") responder.onNext({ data: common.kept.fnf }, true);
  else if (name === "last-metadata-push") responder.onNext({ data: common.kept.metadataPush }, true);
  else if (name !== "never") responder.onError(new RSocketError(ErrorCodes.APPLICATION_ERROR, "unknown route"));
  return { cancel() {}, onExtension: noExtension };
}

function requestStream(payload, initialRequestN, responder, composite) {
  const { name, arg } = common.route(common.routeSource(payload, composite));
  const end = name === "range" ? common.rangeCount(arg) : null;
  const state = { next: 0, credit: initialRequestN, done: false };
  const pump = () => {
    if (state.done || end === null) return;
    if (end === 0) {
      state.done = true;
      responder.onComplete();
      return;
    }
    while (state.credit > 0 && !state.done) {
      const last = state.next === end - 1;
      responder.onNext({ data: Buffer.from(String(state.next)) }, last);
      state.next += 1;
      state.credit -= 1;
      state.done = last;
    }
  };
  if (name === "error") responder.onError(new RSocketError(ErrorCodes.APPLICATION_ERROR, arg));
  else if (end === null && name !== "never") {
    responder.onError(new RSocketError(ErrorCodes.APPLICATION_ERROR, "unknown route"));
  }
  setImmediate(pump);
  return {
    request(n) {
      state.credit += n;
      pump();
    },
    cancel() {
      state.done = true;
    },
    onExtension: noExtension,
  };
}

// Echoes the initial payload and then every PAYLOAD, passing the requester's credit straight
// back as its own request-n, and completes once the requester completed and all was echoed.
function requestChannel(payload, initialRequestN, isCompleted, responder) {
  const state = { queue: [payload], credit: initialRequestN, requesterDone: isCompleted, closed: false };
  const pump = () => {
    while (!state.closed && state.credit > 0 && state.queue.length) {
      const item = state.queue.shift();
      state.credit -= 1;
      responder.onNext({ data: item.data, metadata: item.metadata }, false);
    }
    if (!state.closed && state.requesterDone && !state.queue.length) {
      state.closed = true;
      responder.onComplete();
    }
  };
  if (!isCompleted) responder.request(initialRequestN);
  setImmediate(pump);
  return {
    onNext(item, isComplete) {
      state.queue.push(item);
      state.requesterDone = state.requesterDone || isComplete;
      pump();
    },
    onComplete() {
      state.requesterDone = true;
      pump();
    },
    onError() {
      state.closed = true;
    },
    request(n) {
      if (state.closed) return; // cancelled or done: the requester's credit no longer passes through
      state.credit += n;
      if (!state.requesterDone) responder.request(n);
      pump();
    },
    cancel() {
      state.closed = true;
    },
    onExtension: noExtension,
  };
}

// One per connection: routing by composite metadata applies when its SETUP negotiated it.
function service(setup) {
  const composite = setup.metadataMimeType === common.COMPOSITE_MIME;
  return {
    requestResponse: (payload, responder) => requestResponse(payload, responder, composite),
    requestStream: (payload, n, responder) => requestStream(payload, n, responder, composite),
    requestChannel,
    fireAndForget(payload) {
      const source = common.routeSource(payload, composite);
      if (common.route(source).name === "fnf") common.kept.fnf = Buffer.from(source.subarray(4));
      return { cancel() {} };
    },
    metadataPush(metadata) {
      common.kept.metadataPush = Buffer.from(metadata || []);
    },
  };
}

async function serve(options) {
  const port = Number(options.port);
  const transport = options.transport === "ws"
    ? new WebsocketServerTransport({ host: "127.0.0.1", port, wsCreator: (opts) => new WebSocket.Server(opts) })
    : new TcpServerTransport({ listenOptions: { host: "127.0.0.1", port } });
  // Leases stay off: with `lease` set the library refuses every SETUP without L ("Lease has to be
  // enabled"). Resumption is on only with --resume (the rsocket-js-1.0-resume image): with it, a
  // SETUP with R that the library refuses (with L: "Lease has to be disabled") ends the whole
  // server process, and every case after it would find no server (docs/findings/rsocket.md, F-JS1-11).
  const resume = options.resume ? { resume: { sessionTimeout: Number(options.resume) } } : {};
  const server = new RSocketServer({ transport, acceptor: { accept: async (setup) => service(setup) }, ...resume });
  await server.bind();
  const mode = options.resume ? `, resumption on (sessions kept ${options.resume} ms)` : "";
  console.log(`${LABEL}: serving the test service on ${options.transport || "tcp"} 127.0.0.1:${port}${mode}`);
}

// The promise-based view of a connected RSocket that the cases of rsocket_js_common.js use.
function socketView(rsocket) {
  return {
    requestResponse: (data, metadata) => new Promise((resolve, reject) => {
      rsocket.requestResponse({ data, metadata }, {
        onNext: (payload) => resolve(payload),
        onComplete: () => resolve({ data: null }),
        onError: reject,
        onExtension: noExtension,
      });
    }),
    requestStream: (data, batch) => new Promise((resolve, reject) => {
      const items = [];
      const subscription = rsocket.requestStream({ data }, batch, {
        onNext(payload, isComplete) {
          items.push(payload.data);
          if (isComplete) resolve(items);
          else if (items.length % batch === 0) subscription.request(batch);
        },
        onComplete: () => resolve(items),
        onError: reject,
        onExtension: noExtension,
      });
    }),
    requestChannel: (datas, batch) => new Promise((resolve, reject) => {
      const items = [];
      let sent = 1;
      const requester = rsocket.requestChannel({ data: datas[0] }, batch, datas.length === 1, {
        onNext(payload, isComplete) {
          items.push(payload.data);
          if (isComplete) resolve(items);
          else if (items.length % batch === 0) requester.request(batch);
        },
        onComplete: () => resolve(items),
        onError: reject,
        onExtension: noExtension,
        request(n) {
          for (; n > 0 && sent < datas.length; n -= 1, sent += 1) {
            requester.onNext({ data: datas[sent] }, sent === datas.length - 1);
          }
        },
        cancel: () => reject(new Error("the server cancelled the channel")),
      });
    }),
    fireAndForget: async (data) => {
      rsocket.fireAndForget({ data }, { onComplete() {}, onError() {} });
    },
    metadataPush: async (metadata) => {
      rsocket.metadataPush(metadata, { onComplete() {}, onError() {} });
    },
    close: () => rsocket.close(),
  };
}

async function connect(url, fragmentSize) {
  const { scheme, host, port } = common.splitUrl(url);
  const transport = scheme === "ws"
    ? new WebsocketClientTransport({ url, wsCreator: (address) => new WebSocket(address) })
    : new TcpClientTransport({ connectionOptions: { host, port } });
  const connector = new RSocketConnector({
    setup: { dataMimeType: "text/plain", metadataMimeType: "text/plain", keepAlive: 10000, lifetime: 30000 },
    transport,
    ...(fragmentSize ? { fragmentation: { maxOutboundFragmentSize: fragmentSize } } : {}),
  });
  return socketView(await connector.connect());
}

const options = common.parseArgs(process.argv.slice(2));
if (options.role === "server") {
  common.exitOnSignals(LABEL);
  serve(options).catch((err) => {
    console.log(`${LABEL}: cannot serve: ${err && err.stack ? err.stack : err}`);
    process.exit(1);
  });
} else if (options.role === "client") {
  // 1.0.0-alpha.3's requester throws "Method not implemented." from metadataPush: no such case.
  common.runClient(options.testcase, (fragmentSize) => connect(options.url, fragmentSize),
    { label: LABEL, fragments: true, unsupported: ["metadata-push"] });
} else {
  console.log(`${LABEL}: usage: server --transport tcp|ws --port PORT [--resume SESSION_MS]`
    + " | client --url URL --testcase NAME");
  process.exit(2);
}
