// Makes every server a Node process starts listen on 127.0.0.1 when it names no host
// (server-everything and the conformance suite's mocks otherwise bind all interfaces).
// Usage: node --import ./loopback.mjs SCRIPT ...
//
// Some callers read server.address() right after listen(0), so the socket is bound
// synchronously (a pre-bound handle) instead of through an asynchronous host lookup.
import net from "node:net";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const { TCP, constants } = process.binding("tcp_wrap");

function boundHandle(port) {
  const handle = new TCP(constants.SERVER);
  const err = handle.bind("127.0.0.1", port);
  if (err) {
    handle.close();
    const { UVException } = require("node:util");
    throw Object.assign(new Error(`bind 127.0.0.1:${port} failed (${err})`), { code: "EADDRINUSE", errno: err, UVException });
  }
  return handle;
}

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const [first] = args;
  const port =
    args.length === 0 || typeof first === "function" ? 0
    : typeof first === "number" || (typeof first === "string" && /^\d+$/.test(first)) ? (typeof args[1] === "string" ? null : Number(first))
    : first && typeof first === "object" && !(first instanceof net.Server) && first.host === undefined
        && first.path === undefined && first.fd === undefined && first.handle === undefined && first._handle === undefined
      ? Number(first.port ?? 0)
      : null;
  if (port === null) return listen.apply(this, args);
  const callback = args.find((a) => typeof a === "function");
  return listen.call(this, boundHandle(port), callback);
};
