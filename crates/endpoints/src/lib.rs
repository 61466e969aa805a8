//! Real HTTP endpoints (server and timing client) shared by `quiclab serve|get`, the emulator and the load tester.
