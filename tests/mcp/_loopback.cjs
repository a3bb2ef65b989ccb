// Preloaded with `node --require`: server-everything's HTTP mode calls app.listen(PORT) with no
// host, which binds every interface. Pin any listen() without a host to 127.0.0.1.
const net = require("net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const port = args[0];
  const numeric = typeof port === "number" || (typeof port === "string" && /^\d+$/.test(port));
  if (numeric && typeof args[1] !== "string") args.splice(1, 0, "127.0.0.1");
  return listen.apply(this, args);
};
