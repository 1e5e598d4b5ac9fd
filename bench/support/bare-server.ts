// The baseline for the HTTP bench: a bare uWebSockets.js server on HOST:PORT that answers
// every GET and POST with a small fixed JSON body. A POST's body is read to the end before
// the reply, as the service does, so both pay for receiving it.
import uWS, { type HttpResponse } from 'uWebSockets.js';

const host = process.env.HOST ?? '127.0.0.1';
const port = Number(process.env.PORT ?? 0);
const REPLY = '{"ok":true,"id":"Bare:00000000-0000-7000-8000-000000000000"}';

const reply = (res: HttpResponse): void => {
  res.cork(() => {
    res.writeStatus('200 OK');
    res.writeHeader('Content-Type', 'application/json');
    res.end(REPLY);
  });
};

const app = uWS.App();
app.get('/*', (res) => reply(res));
app.post('/*', (res) => {
  let aborted = false;
  res.onAborted(() => {
    aborted = true;
  });
  res.onData((_chunk, isLast) => {
    if (isLast && !aborted) reply(res);
  });
});
app.listen(host, port, (socket) => {
  if (socket === false) {
    process.stderr.write(`bare server: cannot listen on ${host}:${port}\n`);
    process.exit(1);
  }
  process.stdout.write(`bare server listening on http://${host}:${uWS.us_socket_local_port(socket)}\n`);
});
process.on('SIGTERM', () => process.exit(0));
