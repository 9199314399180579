// Example Switchboard webhook receiver to put in front of your backend, on
// Node's built-in http. It verifies every request with the official Standard
// Webhooks library, ignores redeliveries and logs one line per event.
//
// api/README.md ("A session with a local receiver"): install once, run it with the endpoint's signing secret (the
// whsec_ value of the WebhookEndpoint's Secret), then point the endpoint at
// http(s)://<host>:4000/webhooks/switchboard:
//
//   npm ci --prefix hack/receivers/node
//   SWITCHBOARD_WEBHOOK_SECRET=whsec_... node hack/receivers/node/server.js
//
// PORT changes the port (default 4000).
'use strict';

const http = require('node:http');
const { Webhook, WebhookVerificationError } = require('standardwebhooks');

const secret = process.env.SWITCHBOARD_WEBHOOK_SECRET;
if (!secret) {
  console.error("SWITCHBOARD_WEBHOOK_SECRET must be the endpoint's whsec_... signing secret");
  process.exit(1);
}
const webhook = new Webhook(secret); // throws on a malformed secret
const port = Number(process.env.PORT || 4000);
const maxBody = 1 << 20; // 1 MiB

// Deliveries are at least once: the same event can arrive twice. An
// in-memory set is enough for this example; in production, record the
// webhook-id in your database (a unique key), in the same transaction as
// the work the event triggers.
const seen = new Set();

const server = http.createServer((req, res) => {
  if (req.method !== 'POST' || req.url.split('?')[0] !== '/webhooks/switchboard') {
    res.writeHead(404).end();
    return;
  }
  // Verify the raw bytes as received: re-encoded JSON would not match.
  const chunks = [];
  let size = 0;
  req.on('data', (chunk) => {
    size += chunk.length;
    if (size > maxBody) {
      res.writeHead(413, { Connection: 'close' }).end('body too large');
      req.destroy();
      return;
    }
    chunks.push(chunk);
  });
  req.on('end', () => {
    const body = Buffer.concat(chunks);
    let envelope;
    try {
      // Checks the signature (either one, during a secret rotation) and
      // that webhook-timestamp is within 5 minutes, against replays; then
      // returns the parsed JSON body.
      envelope = webhook.verify(body, req.headers);
    } catch (err) {
      const unauthorized = err instanceof WebhookVerificationError;
      res.writeHead(unauthorized ? 401 : 400).end(unauthorized ? 'invalid signature' : 'invalid JSON');
      return;
    }
    const id = req.headers['webhook-id'];
    if (!seen.has(id)) {
      seen.add(id);
      // Your work goes here. Answer within 10 s; queue anything slower.
      const call = envelope.call || {};
      console.log(`${envelope.event} call_id=${call.call_id} status=${call.status} ` +
        `disposition=${call.disposition || ''} webhook-id=${id}`);
    }
    // Any 2xx acknowledges the delivery; anything else is retried.
    res.writeHead(204).end();
  });
});

server.listen(port, () => console.log(`listening on :${port}, POST /webhooks/switchboard`));
