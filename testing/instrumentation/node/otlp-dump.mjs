#!/usr/bin/env node
// otlp-dump.mjs: prints each span of OTLP/HTTP protobuf trace bodies as one
// JSON line (see otlp-decode.mjs for the fields).
//
//   node otlp-dump.mjs body-0.pb [body-1.pb ...]
//   node otlp-dump.mjs --listen 4318 --out DIR   # a receiver: writes each
//       POST /v1/traces body to DIR/body-N.pb and prints its spans

import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { decodeTraces } from './otlp-decode.mjs';

function print(spans) {
  for (const s of spans) {
    process.stdout.write(JSON.stringify(s, (_, v) => (typeof v === 'bigint' ? v.toString() : v)) + '\n');
  }
}

function listen(port, dir) {
  fs.mkdirSync(dir, { recursive: true });
  let n = 0;
  http
    .createServer((req, res) => {
      const chunks = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => {
        if (req.method !== 'POST' || req.url !== '/v1/traces') {
          res.writeHead(404).end();
          return;
        }
        const body = Buffer.concat(chunks);
        fs.writeFileSync(path.join(dir, `body-${n++}.pb`), body);
        try {
          print(decodeTraces(body));
        } catch (e) {
          process.stderr.write(`undecodable body: ${e.message}\n`);
        }
        res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
      });
    })
    .listen(port, '127.0.0.1');
}

const args = process.argv.slice(2);
if (args[0] === '--listen') {
  if (args.length !== 4 || args[2] !== '--out') {
    process.stderr.write('usage: otlp-dump.mjs --listen PORT --out DIR\n');
    process.exit(2);
  }
  listen(Number(args[1]), args[3]);
} else if (args.length > 0) {
  for (const f of args) print(decodeTraces(fs.readFileSync(f)));
} else {
  process.stderr.write('usage: otlp-dump.mjs BODY.pb... | --listen PORT --out DIR\n');
  process.exit(2);
}
