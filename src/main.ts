// `npm start`. At this stage of the project it runs the offline demo end to end; the HTTP service and the
// BullMQ workers are wired here as they land.
import { runDemo } from './demo.js';

await runDemo();
