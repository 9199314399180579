// Switchboard's launcher of Retell's Node demo: the demo's own src/index.ts
// loads a .env file and listens on 8080; this one listens on the port the
// test gives (argv[2]) and leaves the rest, src/ as Retell publishes it,
// unchanged. The demo reads OPENAI_APIKEY; the openai library reads
// OPENAI_BASE_URL, which the test points at its stand-in model.
import { Server } from "./src/server";

new Server().listen(Number(process.argv[2]));
