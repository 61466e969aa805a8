//! Real-time emulator: namespaces, userspace forwarder with the `netem` link model, real endpoints.
