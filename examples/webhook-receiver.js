const http = require('node:http');
const { createHmac, timingSafeEqual } = require('node:crypto');
const SECRET = process.env.WHS_SECRET; // whs_…
const PORT = Number(process.env.PORT || 3000); // 0: a free port the system picks

function verify(header, rawBody, now = Date.now() / 1000) {
  const parts = header.split(',').map((p) => p.split('='));
  const t = Number(parts.find(([k]) => k === 't')?.[1]);
  if (!(Math.abs(now - t) <= 300)) return false;
  const want = createHmac('sha256', SECRET).update(`${t}.${rawBody}`).digest();
  return parts.some(([k, v]) => k === 'v2' && /^[0-9a-f]{64}$/.test(v) && timingSafeEqual(Buffer.from(v, 'hex'), want));
}

http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c)).on('end', () => {
    const body = Buffer.concat(chunks).toString('utf8'); // decode once: a chunk may split a character
    if (!verify(String(req.headers['x-psp-signature'] ?? ''), body)) return res.writeHead(400).end();
    const event = JSON.parse(body); // de-duplicate on event.id, then act
    console.log(`verified ${event.event} ${event.id}: ${event.data?.id ?? ''} ${event.data?.status ?? ''}`);
    res.writeHead(200).end();
  });
}).listen(PORT, '127.0.0.1'); // this machine only: a receiver on your laptop needs no other
