//! `mnemon mcp` and `mnemon serve`: the MCP server over stdio or HTTP.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;
use mnemon::Namespace;
use mnemon_api::{ApiError, Limits, NamespacePolicy, DEFAULT_MAX_RESPONSE_TOKENS};
use mnemon_server::{
    self as mcp, Backend, HttpOptions, MemoryServer, DEFAULT_BODY_TIMEOUT, DEFAULT_HEADER_TIMEOUT,
    DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_IN_FLIGHT,
};

use crate::commands::opener;
use crate::Cli;

/// Which namespaces a server serves, how its tools are named, and how
/// large its responses may be.
#[derive(Args, Debug)]
pub struct PolicyArgs {
    /// Serve this namespace only: tools take no namespace argument, and a
    /// call naming another is an error.
    #[arg(long, alias = "ns", conflicts_with = "allow_ns")]
    namespace: Option<String>,
    /// Serve only these namespaces (comma-separated; `prefix*` allows every
    /// namespace with that prefix). Default: any namespace a call names.
    #[arg(long)]
    allow_ns: Option<String>,
    /// Most estimated tokens in one response (lists are paged below it).
    #[arg(long, default_value_t = DEFAULT_MAX_RESPONSE_TOKENS, allow_hyphen_values = true)]
    max_response_tokens: usize,
    /// What every tool name starts with: `memory_recall`, `memory_forget`, …
    /// (up to 64 of [A-Za-z0-9_.-]; empty: `recall`, `forget`, …). A prefix
    /// keeps names like `list`, `get` and `forget` apart from other
    /// servers' tools in clients that do not prefix them.
    #[arg(long, env = "MNEMON_TOOL_PREFIX", default_value = mcp::DEFAULT_TOOL_PREFIX)]
    tool_prefix: String,
}

impl PolicyArgs {
    fn policy(&self) -> Result<NamespacePolicy, ApiError> {
        Ok(match (&self.namespace, &self.allow_ns) {
            (Some(ns), _) => NamespacePolicy::Only(Namespace::new(ns.as_str())?),
            (None, Some(list)) => NamespacePolicy::allow_list(list)?,
            (None, None) => NamespacePolicy::Any,
        })
    }

    fn limits(&self) -> Result<Limits, ApiError> {
        if self.max_response_tokens < 1000 {
            return Err(ApiError::invalid(
                "max_response_tokens",
                format!("must be at least 1000, got {}", self.max_response_tokens),
            ));
        }
        Ok(Limits { max_response_tokens: self.max_response_tokens })
    }
}

#[derive(Args, Debug)]
pub struct McpArgs {
    #[command(flatten)]
    policy: PolicyArgs,
}

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Address to listen on. Anything but loopback requires a token.
    #[arg(long, default_value = "127.0.0.1:7437")]
    listen: SocketAddr,
    /// Bearer token every request must carry (`Authorization: Bearer TOKEN`).
    #[arg(long, env = "MNEMON_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// Largest request body in bytes.
    #[arg(long, default_value_t = DEFAULT_MAX_BODY_BYTES, allow_hyphen_values = true)]
    max_body_bytes: usize,
    /// Most MCP sessions open at once; a new client beyond it closes the
    /// session idle longest.
    #[arg(long, default_value_t = mnemon_server::DEFAULT_MAX_SESSIONS, allow_hyphen_values = true)]
    max_sessions: usize,
    /// Seconds after which an idle MCP session is closed (its client then
    /// initialises a new one).
    #[arg(long, default_value_t = mnemon_server::DEFAULT_SESSION_IDLE_SECS, allow_hyphen_values = true)]
    session_idle_secs: u64,
    /// Seconds a client has to send a request's headers, from the
    /// connection's opening or the end of its previous request (so also the
    /// longest a kept-alive connection may sit idle); then it is closed.
    #[arg(long, default_value_t = DEFAULT_HEADER_TIMEOUT.as_secs(), allow_hyphen_values = true)]
    header_timeout_secs: u64,
    /// Seconds a client has to send a request's body once its headers are in (then: 408).
    #[arg(long, default_value_t = DEFAULT_BODY_TIMEOUT.as_secs(), allow_hyphen_values = true)]
    body_timeout_secs: u64,
    /// Most connections open at once; more are answered 503 (Retry-After) and closed.
    #[arg(long, default_value_t = DEFAULT_MAX_CONNECTIONS, allow_hyphen_values = true)]
    max_connections: usize,
    /// Most REST calls running at once; one more is answered 429 (Retry-After).
    #[arg(long, default_value_t = DEFAULT_MAX_IN_FLIGHT, allow_hyphen_values = true)]
    max_in_flight: usize,
    /// Browser origins allowed to call /mcp and the REST routes besides loopback ones
    /// (comma-separated `scheme://host[:port]`); others get 403.
    #[arg(long, value_delimiter = ',')]
    allow_origin: Vec<String>,
    #[command(flatten)]
    policy: PolicyArgs,
    #[cfg(feature = "cluster")]
    #[command(flatten)]
    cluster: ClusterArgs,
}

/// Cluster mode: namespace-sharded daemons over NATS JetStream.
#[cfg(feature = "cluster")]
#[derive(Args, Debug)]
pub struct ClusterArgs {
    /// Join a cluster through these NATS servers (comma-separated
    /// `nats://host:port`, JetStream enabled). Each namespace the daemon
    /// serves gets its own store under DATA/ns/.
    #[arg(long, value_delimiter = ',', env = "MNEMON_CLUSTER")]
    cluster: Vec<String>,
    /// This daemon's id, unique in the cluster (1-64 of [A-Za-z0-9_-]).
    #[arg(long, env = "MNEMON_DAEMON_ID", requires = "cluster")]
    daemon_id: Option<String>,
    /// Prefix of the cluster's NATS streams, buckets and subjects (1-32 of [a-z0-9]).
    #[arg(long, default_value = "mnemon", requires = "cluster")]
    cluster_prefix: String,
    /// Writer lease TTL in seconds (an owner that dies or stops is replaced after about this long; every daemon of a cluster should use the same).
    #[arg(long, default_value_t = mnemon_cluster::DEFAULT_LEASE_TTL.as_secs(), requires = "cluster", allow_hyphen_values = true)]
    lease_ttl_secs: u64,
    /// JetStream replicas of every stream and bucket (at most the NATS cluster's size).
    #[arg(long, default_value_t = 3, requires = "cluster", allow_hyphen_values = true)]
    replicas: usize,
}

#[cfg(feature = "cluster")]
fn cluster_backend(cli: &Cli, c: &ClusterArgs, limits: Limits) -> Result<Backend, ApiError> {
    let id = c.daemon_id.clone().ok_or_else(|| ApiError::invalid("daemon_id", "--cluster needs --daemon-id"))?;
    // A daemon creates a store for each namespace it comes to serve, all
    // with one embedder: under `auto` with no model installed they would
    // all recall by exact words only.
    let choice: mnemon::embed::EmbedderChoice = cli.embedder.parse()?;
    mnemon::embed::check_new_store(choice, &crate::commands::models_dir(cli), &cli.data, None)?;
    let embedder = crate::commands::load_embedder(cli)?;
    let regions: Vec<String> = cli.phone_region_codes().map(str::to_owned).collect();
    // With a key every namespace's store is encrypted, its data keys
    // shared with the other daemons through the cluster's key bucket;
    // checked here, so a key that does not load refuses the start.
    let key = crate::commands::key_settings(cli).provider;
    if let Some(p) = &key {
        p.kek()?;
    }
    let encrypted = key.is_some();
    let opener: mnemon_cluster::Opener = Arc::new(move |dir: &std::path::Path| {
        let b = mnemon::Engine::builder(dir)
            .embedder(embedder.clone())
            .phone_regions(regions.iter().map(String::as_str))
            .cache_bytes(16 << 20);
        match &key {
            Some(p) => b.key_provider(p.clone()),
            None => b,
        }
    });
    let node = mnemon_cluster::ClusterNode::builder(&cli.data, id, &c.cluster)
        .prefix(c.cluster_prefix.as_str())
        .lease_ttl(std::time::Duration::from_secs(c.lease_ttl_secs))
        .replicas(c.replicas)
        .engine(opener)
        .start()?;
    eprintln!("mnemon: daemon {} joined the cluster at {}", node.daemon_id(), c.cluster.join(","));
    if encrypted {
        eprintln!(
            "mnemon: every namespace is encrypted at rest; data keys are shared in bucket {}-keys",
            c.cluster_prefix
        );
    }
    Ok(Backend::cluster(node, limits))
}

fn server(cli: &Cli, p: &PolicyArgs) -> Result<(Arc<Backend>, MemoryServer), ApiError> {
    let policy = p.policy()?;
    let limits = p.limits()?;
    // Checked before the store is opened: a refused setting opens nothing.
    mcp::check_tool_prefix(&p.tool_prefix)?;
    let backend = Arc::new(Backend::open(&cli.data, limits, opener(cli))?);
    if let Err(e) = crate::commands::forwarded_settings(cli, &cli.data, &backend) {
        let _ = backend.close();
        return Err(e);
    }
    // Opening printed the notice of a store held here (`open_store`).
    let notice = store_notice(cli, &backend);
    match backend.store_holder() {
        // Started before a model was installed: the server stays up, says
        // so here and in its instructions, and answers every call with the
        // refusal until a call finds a model.
        _ if backend.refusal().is_some() => eprintln!(
            "mnemon: warning: {}; until then every tool call fails with error code embedder",
            backend.refusal().map(|e| e.message).unwrap_or_default()
        ),
        _ if backend.holds_store() => {}
        Some((pid, false)) => eprintln!(
            "mnemon: the store is held by process {pid}, which serves no socket: calls are refused as locked \
             until it closes the store, then this server takes the store over"
        ),
        _ => eprintln!("mnemon: the store is held by another process; serving through its socket"),
    }
    let server = match MemoryServer::with_tool_prefix(backend.clone(), policy, &p.tool_prefix) {
        Ok(s) => s,
        Err(e) => {
            let _ = backend.close();
            return Err(e);
        }
    };
    server.set_notice(notice);
    Ok((backend, server))
}

/// The notice for a store on the hashing embedder served under
/// `--embedder auto` while a neural model is installed
/// ([`mnemon::embed::lexical_store_notice`]), from the model the store's
/// `stats` reports (also when another process holds it).
fn store_notice(cli: &Cli, backend: &Backend) -> Option<String> {
    if backend.refusal().is_some() {
        return None;
    }
    let choice: mnemon::embed::EmbedderChoice = cli.embedder.parse().ok()?;
    let stats = backend.call(mnemon_api::Request::Stats(mnemon_api::StatsRequest {})).ok()?;
    let model_id = stats.get("model_id")?.as_str()?;
    mnemon::embed::lexical_store_notice(choice, &crate::commands::models_dir(cli), &cli.data, model_id)
}

/// `mnemon mcp`: MCP on stdio until stdin closes or a signal arrives.
pub fn mcp(cli: &Cli, a: &McpArgs) -> Result<ExitCode, ApiError> {
    let (backend, server) = server(cli, &a.policy)?;
    let served = mcp::run_stdio(server);
    let closed = backend.close();
    served?;
    closed?;
    Ok(ExitCode::SUCCESS)
}

/// `mnemon serve`: MCP over HTTP at /mcp until SIGINT/SIGTERM.
pub fn serve(cli: &Cli, a: &ServeArgs) -> Result<ExitCode, ApiError> {
    let opts = HttpOptions {
        listen: a.listen,
        token: a.token.clone(),
        max_body_bytes: a.max_body_bytes,
        max_sessions: a.max_sessions,
        session_idle: std::time::Duration::from_secs(a.session_idle_secs),
        header_timeout: std::time::Duration::from_secs(a.header_timeout_secs),
        body_timeout: std::time::Duration::from_secs(a.body_timeout_secs),
        max_connections: a.max_connections,
        max_in_flight: a.max_in_flight,
        allowed_origins: a.allow_origin.clone(),
    };
    mcp::check_tool_prefix(&a.policy.tool_prefix)?;
    #[cfg(feature = "cluster")]
    let (backend, server) = if a.cluster.cluster.is_empty() {
        server(cli, &a.policy)?
    } else {
        let backend = Arc::new(cluster_backend(cli, &a.cluster, a.policy.limits()?)?);
        let server = MemoryServer::with_tool_prefix(backend.clone(), a.policy.policy()?, &a.policy.tool_prefix)?;
        (backend, server)
    };
    #[cfg(not(feature = "cluster"))]
    let (backend, server) = server(cli, &a.policy)?;
    let served = mcp::run_http(server, opts);
    let closed = backend.close();
    served?;
    closed?;
    Ok(ExitCode::SUCCESS)
}
