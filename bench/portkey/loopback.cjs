// loopback.cjs - preloaded (`node --require`) into Portkey's gateway by
// bench/gateway_vs_portkey.sh so that it listens on a free loopback port instead
// of its fixed default (8787 on every interface): the first HTTP server that
// listens is bound to 127.0.0.1 port 0, and its port is written to the file
// named by $PORTKEY_PORT_FILE ("PORT\n", renamed into place once it listens).
// Portkey's own code is not changed; only where it listens.
'use strict';
const http = require('http');
const fs = require('fs');

const file = process.env.PORTKEY_PORT_FILE;
const listen = http.Server.prototype.listen;
let done = false;
http.Server.prototype.listen = function (...args) {
    if (done) return listen.apply(this, args);
    done = true;
    const cb = args.find((a) => typeof a === 'function');
    this.once('listening', () => {
        if (!file) return;
        fs.writeFileSync(`${file}.tmp`, `${this.address().port}\n`);
        fs.renameSync(`${file}.tmp`, file);
    });
    return cb ? listen.call(this, 0, '127.0.0.1', cb) : listen.call(this, 0, '127.0.0.1');
};
