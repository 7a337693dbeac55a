//! A local NATS cluster for tests and benches: `n` `nats-server` processes
//! with JetStream, clustered on free loopback ports, each with its own
//! temporary store directory; stopped (SIGKILL) when dropped.
#![allow(dead_code)]

use std::fs;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The `nats-server` binary: `$MNEMON_NATS_SERVER`, else `nats-server` on
/// the PATH, else Debian's `/usr/sbin/nats-server`.
pub fn server_binary() -> PathBuf {
    if let Ok(p) = std::env::var("MNEMON_NATS_SERVER") {
        return PathBuf::from(p);
    }
    if let Ok(path) = std::env::var("PATH") {
        for d in std::env::split_paths(&path) {
            let c = d.join("nats-server");
            if c.is_file() {
                return c;
            }
        }
    }
    let debian = PathBuf::from("/usr/sbin/nats-server");
    assert!(debian.is_file(), "nats-server is not installed (apt-get install nats-server, or set MNEMON_NATS_SERVER)");
    debian
}

/// A free loopback TCP port (bound and released; the OS does not hand it
/// out again at once).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("free port")
}

/// One server of the cluster.
pub struct Node {
    pub name: String,
    pub port: u16,
    pub route_port: u16,
    pub store: PathBuf,
    pub conf: PathBuf,
    pub log: PathBuf,
    /// Length of the log file when the current process started.
    log_from: u64,
    child: Option<Child>,
}

/// The cluster; its directory holds every node's store, config and log.
pub struct NatsCluster {
    pub dir: tempfile::TempDir,
    pub nodes: Vec<Node>,
}

impl NatsCluster {
    /// Starts `n` nodes and waits until JetStream has a metadata leader.
    pub fn start(n: usize) -> NatsCluster {
        let dir = tempfile::tempdir().expect("temp dir");
        let ports: Vec<(u16, u16)> = (0..n).map(|_| (free_port(), free_port())).collect();
        let routes: Vec<String> = ports.iter().map(|(_, r)| format!("nats-route://127.0.0.1:{r}")).collect();
        let mut nodes = Vec::new();
        for (i, (port, route_port)) in ports.iter().enumerate() {
            let name = format!("n{}", i + 1);
            let store = dir.path().join(format!("{name}-store"));
            let conf = dir.path().join(format!("{name}.conf"));
            let log = dir.path().join(format!("{name}.log"));
            let cluster = if n > 1 {
                format!(
                    "cluster {{ name: mnemon-test, listen: 127.0.0.1:{route_port}, routes: [{}] }}",
                    routes.join(", ")
                )
            } else {
                String::new()
            };
            fs::write(
                &conf,
                format!(
                    "server_name: {name}\nlisten: 127.0.0.1:{port}\n\
                     jetstream {{ store_dir: \"{}\", max_memory_store: 64MB, max_file_store: 4GB }}\n{cluster}\n",
                    store.display()
                ),
            )
            .expect("write config");
            nodes.push(Node { name, port: *port, route_port: *route_port, store, conf, log, log_from: 0, child: None });
        }
        let mut c = NatsCluster { dir, nodes };
        for i in 0..n {
            c.spawn(i);
        }
        c.wait_ready(Duration::from_secs(30));
        c
    }

    fn spawn(&mut self, i: usize) {
        let node = &mut self.nodes[i];
        let log = fs::OpenOptions::new().create(true).append(true).open(&node.log).expect("log file");
        node.log_from = log.metadata().map(|m| m.len()).unwrap_or(0);
        let child = Command::new(server_binary())
            .arg("-c")
            .arg(&node.conf)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start nats-server");
        node.child = Some(child);
    }

    /// Waits until every running node reports itself ready and the cluster
    /// has a JetStream metadata leader.
    pub fn wait_ready(&self, limit: Duration) {
        let deadline = Instant::now() + limit;
        loop {
            let logs: Vec<String> = self
                .nodes
                .iter()
                .filter(|n| n.child.is_some())
                .map(|n| {
                    let all = fs::read(&n.log).unwrap_or_default();
                    let from = usize::try_from(n.log_from).unwrap_or(0).min(all.len());
                    String::from_utf8_lossy(&all[from..]).into_owned()
                })
                .collect();
            let ready = logs.iter().all(|l| l.contains("Server is ready"));
            let leader = self.nodes.len() == 1 || logs.iter().any(|l| l.contains("new metadata leader"));
            if ready && leader {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "NATS cluster not ready within {limit:?}; logs under {}",
                self.dir.path().display()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Client URLs of every node.
    pub fn urls(&self) -> Vec<String> {
        self.nodes.iter().map(|n| format!("nats://127.0.0.1:{}", n.port)).collect()
    }

    /// Store directories of every node.
    pub fn store_dirs(&self) -> Vec<PathBuf> {
        self.nodes.iter().map(|n| n.store.clone()).collect()
    }

    /// SIGKILLs node `i`.
    pub fn kill(&mut self, i: usize) {
        if let Some(mut c) = self.nodes[i].child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Restarts node `i` on its ports and store (after `kill`).
    pub fn restart(&mut self, i: usize) {
        self.kill(i);
        self.spawn(i);
    }

    /// The directory holding the nodes.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for NatsCluster {
    fn drop(&mut self) {
        for i in 0..self.nodes.len() {
            self.kill(i);
        }
        if std::env::var_os("MNEMON_KEEP_NATS").is_some() {
            let dir = std::mem::replace(&mut self.dir, tempfile::tempdir().expect("temp dir"));
            eprintln!("NATS directories kept in {}", dir.keep().display());
        }
    }
}
