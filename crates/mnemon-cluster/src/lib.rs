//! Namespace-sharded daemons over a replicated NATS JetStream log (feature
//! `cluster`).
//!
//! Several daemons ([`ClusterNode`]) share one NATS cluster. Each namespace
//! has one writer in the fleet — the daemon holding its lease in a
//! JetStream key-value bucket (TTL, revision-checked renewal) — and its log
//! of record is a JetStream stream replicated on the NATS nodes. The owner
//! keeps the namespace as its own local engine (`DATA/ns/<token>/`, an
//! ordinary data directory), so a memory's id — the namespace's event
//! index — is the same on every daemon and survives failover.
//!
//! * **Writes**: the writer appends each group to the stream with the
//!   expected last sequence (`Nats-Expected-Last-Subject-Sequence`) and
//!   only after JetStream confirms it (a quorum of replicas holds it)
//!   writes it locally and acknowledges. A refused or unconfirmed append
//!   is [`mnemon::Error::Fenced`] or [`mnemon::Error::Unavailable`] and
//!   stops the namespace here (fail-stop).
//! * **Fencing**: a daemon that takes a lease first appends a takeover
//!   marker, so a previous owner (paused, partitioned) fails its next
//!   append's check and can never write again.
//! * **Failover**: when an owner dies its lease expires; the next daemon
//!   asked takes it, catches its local copy up from the stream (from the
//!   copy's own position if it has one) and serves.
//! * **Routing**: [`ClusterNode::call`] runs a call where its namespace is
//!   served, forwarding it over NATS to the owner; clients may ask any
//!   daemon.
//! * **Erasure**: [`ClusterNode::compact`] rewrites the namespace into a
//!   new stream generation and deletes the old stream (see `erase.rs`).
//! * **Encryption**: with a key in the engine builder, every namespace is
//!   an encrypted store whose data keys live in the key bucket (see
//!   `keys.rs`): records and vectors travel sealed, and forgetting a whole
//!   namespace shreds its keys on every daemon ([`ClusterNode::verify_shred`]
//!   proves it, the stream included).
//! * **Surface**: [`surface_handler`] runs command-surface requests
//!   ([`mnemon_api`]) at the owner; `mnemon serve --cluster` installs it
//!   behind its MCP server and the NATS door.
//!
//! What it is not: a consensus protocol of our own (JetStream's Raft
//! provides replication and ordering), cross-namespace transactions, or
//! TLS/authentication to NATS (run NATS on a private network or loopback).

mod catchup;
mod conn;
mod directory;
mod erase;
mod keys;
mod lease;
mod names;
mod node;
mod renew;
mod replica;
mod rpc;
mod stream;
mod surface;
mod take;
mod wire;

pub use catchup::CatchUp;
pub use erase::{ClusterErasure, ScrubReport};
pub use node::{ClusterBuilder, ClusterNode, Handler, Opener, Retry, Route, Served, DEFAULT_LEASE_TTL};
pub use rpc::{CallReply, CallRequest};
pub use surface::{surface_body, surface_handler, surface_reply, SurfaceRetry};
