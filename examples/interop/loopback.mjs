// Makes every server a Node process starts listen on 127.0.0.1 when it names no host
// (server-everything and the conformance suite's mocks otherwise bind all interfaces).
// Usage: node --import ./loopback.mjs SCRIPT ...
import net from "node:net";

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const [first] = args;
  if (args.length === 0 || typeof first === "function") {
    args.unshift(0, "127.0.0.1");
  } else if (typeof first === "number" || (typeof first === "string" && /^\d+$/.test(first))) {
    if (typeof args[1] !== "string") args.splice(1, 0, "127.0.0.1");
  } else if (first && typeof first === "object" && first.host === undefined && first.path === undefined
    && first.fd === undefined && first.handle === undefined && !(first instanceof net.Server)) {
    args[0] = { ...first, host: "127.0.0.1" };
  }
  return listen.apply(this, args);
};
