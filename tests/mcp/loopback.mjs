// Preloaded into a test server (node --import ./loopback.mjs ...): keeps it
// on 127.0.0.1 whatever port or host it asks for, and says on stderr which
// port it got, so a test can ask for port 0 and never race for a free one.
import net from 'node:net';

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (typeof args[0] === 'number' || typeof args[0] === 'string') {
    const callback = args.find((arg) => typeof arg === 'function');
    this.once('listening', () => {
      process.stderr.write(`listening on 127.0.0.1:${this.address().port}\n`);
    });
    return listen.call(this, { port: Number(args[0]), host: '127.0.0.1' }, callback);
  }
  return listen.apply(this, args);
};
