//! The inspector that `mnemon serve` shows at `/`, over real HTTP against a
//! `mnemon serve` child on a free port, on the store `mnemon demo` builds:
//! every page loads, the version chain and the timeline show the demo's
//! entries, the as-of views show the old coffee preference, stored markup
//! renders as text, looking writes nothing, and the token rules hold
//! (header, `?token=` into a cookie, 401 without).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

#[path = "common/serve.rs"]
mod serve;

const BIN: &str = env!("CARGO_BIN_EXE_mnemon");
const NS: &str = "user:lin-wei";
const MARKUP: &str = "Lin's note: <script>alert('x')</script> and </div></td></table> <b>bold</b> & more";

fn mnemon(data: &Path, args: &[&str]) -> String {
    let out = Command::new(BIN).arg("--data").arg(data).args(["--embedder", "hashing"]).args(args).output().unwrap();
    assert!(out.status.success(), "mnemon {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn json(data: &Path, args: &[&str]) -> Value {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    serde_json::from_str(&mnemon(data, &all)).unwrap()
}

/// The demo's store plus one memory holding markup; returns its id.
fn demo_store(data: &Path) -> u64 {
    mnemon(data, &["demo", "--keep", data.to_str().unwrap()]);
    let r = json(data, &["remember", "--ns", NS, "--dedup", "off", MARKUP]);
    r["id"].as_u64().unwrap()
}

/// A `mnemon serve` child and the inspector's base URL.
struct Server {
    child: Child,
    base: String,
}

impl Server {
    fn start(data: &Path, listen: &str, extra: &[&str]) -> Server {
        let mut child = Command::new(BIN)
            .arg("--data")
            .arg(data)
            .args(["--embedder", "hashing", "serve", "--listen", listen])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let addr = serve::announced(&mut lines, "mnemon: inspector on http://").trim_end_matches('/').to_string();
        std::thread::spawn(move || for _ in lines {});
        // Bound to every address: reach it on loopback.
        let addr = addr.replace("0.0.0.0", "127.0.0.1");
        Server { child, base: format!("http://{addr}") }
    }

    fn stop(mut self) {
        Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status().unwrap();
        let start = Instant::now();
        while self.child.try_wait().unwrap().is_none() {
            assert!(start.elapsed() < Duration::from_secs(60), "server ignored SIGTERM");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn client() -> reqwest::Client {
    reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap()
}

/// GET `path`; the status and body.
async fn get(c: &reqwest::Client, base: &str, path: &str, headers: &[(&str, &str)]) -> (u16, String) {
    let mut req = c.get(format!("{base}{path}"));
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let r = req.send().await.unwrap();
    let status = r.status().as_u16();
    (status, r.text().await.unwrap())
}

async fn page(c: &reqwest::Client, base: &str, path: &str) -> String {
    let (status, body) = get(c, base, path, &[]).await;
    assert_eq!(status, 200, "{path}: {body}");
    assert!(body.starts_with("<!doctype html>"), "{path}: {body}");
    body
}

/// The HTML of the element with `id` up to the end of the page (enough to
/// look for entries inside it).
fn from_id<'a>(html: &'a str, id: &str) -> &'a str {
    let at = html.find(&format!("id=\"{id}\"")).unwrap_or_else(|| panic!("no element {id}"));
    &html[at..]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_page_shows_the_demo_store() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("store");
    let markup_id = demo_store(&data);
    let coffee: Vec<Value> = json(&data, &["list", "--ns", NS, "--all"])["memories"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["key"] == "user.coffee")
        .cloned()
        .collect();
    assert_eq!(coffee.len(), 2, "{coffee:?}");
    let (old, new) = (&coffee[0], &coffee[1]);
    // The last event before the new version: its source observation.
    let before_change = new["id"].as_u64().unwrap() - 1;
    assert!(old["superseded_seq"].as_u64().unwrap() > before_change);
    let log_before = mnemon(&data, &["log", "--ns", NS]);

    let server = Server::start(&data, "127.0.0.1:0", &[]);
    let c = client();
    let base = &server.base;

    // Namespaces with counts.
    let index = page(&c, base, "/").await;
    let row = from_id(&index, "namespaces");
    assert!(row.contains("href=\"/ns/user:lin-wei\""), "{index}");
    let summary = &json(&data, &["namespaces"])["namespaces"][0];
    assert_eq!(summary["namespace"], NS);
    assert!(row.contains(&format!("<td class=\"num\">{}</td>", summary["active"])), "{index}");
    assert!(summary["forgotten_memories"].as_u64().unwrap() >= 1, "{summary}");

    // The memories: the current coffee preference, not the old one.
    let list = page(&c, base, &format!("/ns/{NS}")).await;
    assert!(list.contains("dark-roast"), "{list}");
    assert!(!list.contains("light-roast Ethiopian"), "{list}");
    // Filters: kind, tier, text, status.
    let prefs = page(&c, base, &format!("/ns/{NS}?kind=preference")).await;
    assert!(prefs.contains("dark-roast"));
    assert!(!prefs.contains("peanut allergy"), "{prefs}");
    let found = page(&c, base, &format!("/ns/{NS}?q=PEANUT")).await;
    assert!(found.contains("peanut allergy") && !found.contains("dark-roast"), "{found}");
    let perm = page(&c, base, &format!("/ns/{NS}?tier=permanent")).await;
    assert!(perm.contains("peanut allergy") && !perm.contains("dark-roast"), "{perm}");
    let sup = page(&c, base, &format!("/ns/{NS}?status=superseded")).await;
    assert!(sup.contains("light-roast Ethiopian") && !sup.contains("dark-roast"), "{sup}");
    // Paging: one memory a page, the next link leads on, nothing repeats.
    let first = page(&c, base, &format!("/ns/{NS}?limit=1")).await;
    let next = from_id(&first, "next");
    let href = next.split('"').nth(3).unwrap().replace("&amp;", "&");
    let second = page(&c, base, &href).await;
    let ids = |h: &str| -> Vec<String> {
        h.split("/memory/").skip(1).map(|s| s.split('"').next().unwrap().to_string()).collect()
    };
    assert_eq!(ids(&first).len(), 1);
    assert_eq!(ids(&second).len(), 1);
    assert_ne!(ids(&first), ids(&second));

    // The version chain side by side, with the reason and the sources.
    let chain = page(&c, base, &format!("/ns/{NS}/memory/{}", new["id"])).await;
    let chain = from_id(&chain, "chain");
    let (a, b) = (chain.find("light-roast Ethiopian").unwrap(), chain.find("dark-roast").unwrap());
    assert!(a < b, "oldest first");
    assert!(chain.contains("<b class=\"reason\">slot key</b>"), "{chain}");
    assert!(chain.contains("For coffee I like light roasts"), "source observation: {chain}");
    assert!(chain.contains("class=\"content changed\""), "the changed content is marked: {chain}");

    // The timeline: an SVG plot and the demo's events by kind.
    let t = page(&c, base, &format!("/ns/{NS}/timeline")).await;
    assert!(from_id(&t, "plot").contains("<svg"), "{t}");
    let counts = json(&data, &["timeline", "--ns", NS, "--buckets", "1"]);
    let b = &counts["buckets"][0];
    assert!(b["observed"].as_u64().unwrap() >= 10 && b["superseded"].as_u64().unwrap() >= 1, "{counts}");
    assert!(b["accessed"].as_u64().unwrap() >= 1 && b["forgotten"].as_u64().unwrap() >= 2, "{counts}");
    let one = page(&c, base, &format!("/ns/{NS}/timeline?buckets=1")).await;
    let row = from_id(&one, "buckets");
    for kind in ["observed", "extracted", "superseded", "accessed", "forgotten"] {
        assert!(row.contains(&format!("<td class=\"num\">{}</td>", b[kind])), "{kind}: {row}");
    }
    assert!(row.contains(&format!("as_of=seq&amp;at={}", b["last_seq"])), "{row}");

    // As of: before the change (log position) and in early April (valid time).
    for q in [format!("as_of=seq&at={before_change}"), "as_of=valid_time&at=2026-04-01".to_string()] {
        let then = page(&c, base, &format!("/ns/{NS}?{q}")).await;
        assert!(then.contains("id=\"as-of\""), "{then}");
        assert!(then.contains("light-roast Ethiopian"), "{q}: {then}");
        assert!(!then.contains("dark-roast"), "{q}: {then}");
    }

    // The block an agent would get, with each hit's score parts.
    let r = page(&c, base, &format!("/ns/{NS}/recall?q=coffee+to+buy&k=3")).await;
    assert!(from_id(&r, "block").contains("dark-roast"), "{r}");
    let relevant = from_id(&r, "part-relevant");
    assert!(relevant.contains("<meter min=\"-1.0\" max=\"1.0\""), "bars: {r}");

    // Erasure: counts and reasons, never the forgotten text.
    let e = page(&c, base, &format!("/ns/{NS}/erasure")).await;
    assert!(from_id(&e, "requests").contains("user asked to forget their employer"), "{e}");
    assert!(!e.contains("logistics company"), "forgotten content shown: {e}");
    for p in ["/", &format!("/ns/{NS}"), &format!("/ns/{NS}?status=all"), &format!("/ns/{NS}/timeline")] {
        assert!(!page(&c, base, p).await.contains("logistics company"), "forgotten content on {p}");
    }

    // Stored markup is text everywhere it shows.
    for p in [format!("/ns/{NS}?status=all"), format!("/ns/{NS}/memory/{markup_id}")] {
        let h = page(&c, base, &p).await;
        assert!(h.contains("&lt;script&gt;alert("), "{p}: {h}");
        assert!(h.contains("&lt;&#x2f;div&gt;") || h.contains("&lt;/div&gt;"), "{p}: {h}");
        assert!(!h.contains("<script>"), "{p}: {h}");
        assert!(!h.contains("</div></td></table>"), "{p}: {h}");
    }

    // Errors are pages, not crashes; only GET and HEAD.
    assert_eq!(get(&c, base, "/ns/no%20such", &[]).await.0, 400);
    assert_eq!(get(&c, base, &format!("/ns/{NS}/memory/999999"), &[]).await.0, 404);
    assert_eq!(get(&c, base, "/nowhere", &[]).await.0, 404);
    assert_eq!(get(&c, base, &format!("/ns/{NS}?as_of=seq&at=99999999"), &[]).await.0, 400);
    let post = c.post(format!("{base}/ns/{NS}")).body("x").send().await.unwrap();
    assert_eq!(post.status().as_u16(), 405);
    // Another web page's name for this host (DNS rebinding) is refused.
    assert_eq!(get(&c, base, "/", &[("Host", "evil.example:80")]).await.0, 403);

    // Looking wrote nothing: the log is as it was.
    server.stop();
    assert_eq!(mnemon(&data, &["log", "--ns", NS]), log_before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn off_loopback_the_token_is_required() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("store");
    demo_store(&data);
    let server = Server::start(&data, "0.0.0.0:0", &["--token", "t0ken-9"]);
    let c = client();
    let base = &server.base;
    for path in ["/", &format!("/ns/{NS}"), &format!("/ns/{NS}/timeline")] {
        let (status, body) = get(&c, base, path, &[]).await;
        assert_eq!(status, 401, "{path}");
        assert!(!body.contains("dark-roast"), "{body}");
        assert_eq!(get(&c, base, path, &[("Authorization", "Bearer wrong")]).await.0, 401);
        assert_eq!(get(&c, base, path, &[("Cookie", "mnemon_inspector=t0ken-9")]).await.0, 401);
    }
    // The header works.
    let (status, body) = get(&c, base, &format!("/ns/{NS}"), &[("Authorization", "Bearer t0ken-9")]).await;
    assert_eq!(status, 200);
    assert!(body.contains("dark-roast"));
    // ?token= once: a redirect without the token that sets the cookie.
    assert_eq!(get(&c, base, "/?token=nope", &[]).await.0, 401);
    let r = c.get(format!("{base}/ns/{NS}?kind=preference&token=t0ken-9")).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 303);
    assert_eq!(r.headers()["location"], format!("/ns/{NS}?kind=preference"));
    let set = r.headers()["set-cookie"].to_str().unwrap().to_string();
    assert!(set.contains("HttpOnly") && set.contains("SameSite=Strict"), "{set}");
    assert!(!set.contains("t0ken-9"), "the cookie is not the token: {set}");
    let cookie = set.split(';').next().unwrap();
    let (status, body) = get(&c, base, &format!("/ns/{NS}?kind=preference"), &[("Cookie", cookie)]).await;
    assert_eq!(status, 200);
    assert!(body.contains("dark-roast"));
    // The cookie does not open the MCP endpoint.
    let mcp = c.post(format!("{base}/mcp")).header("Cookie", cookie).body("{}").send().await.unwrap();
    assert_eq!(mcp.status().as_u16(), 401);
    server.stop();
}

/// Two compactions through the CLI: `mnemon receipts` lists both, newest
/// first, paged, in the surface's JSON; the erasure page shows them as
/// rows; neither holds the erased text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn erasure_page_lists_compaction_receipts() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("store");
    let canary = "receipt canary 7f3a9c1e55d04b2a <script>x</script>";
    // A store that was never compacted has no receipts.
    json(&data, &["remember", "--ns", "other", "The first note of this store"]);
    assert!(json(&data, &["receipts"])["receipts"].as_array().unwrap().is_empty());
    assert!(mnemon(&data, &["receipts"]).contains("never compacted"));
    for round in 0..2 {
        let text = format!("{canary} round {round}");
        let id = json(&data, &["remember", "--ns", "u1", "--dedup", "off", &text])["id"].as_u64().unwrap();
        json(&data, &["remember", "--ns", "u1", "--dedup", "off", &format!("A kept memory, round {round}")]);
        json(&data, &["forget", "--ns", "u1", "--id", &id.to_string(), "--reason", "asked"]);
        assert_eq!(json(&data, &["compact"])["verified"], true);
    }

    let all = json(&data, &["receipts"]);
    let list = all["receipts"].as_array().unwrap();
    let gens: Vec<(u64, u64)> =
        list.iter().map(|r| (r["previous_generation"].as_u64().unwrap(), r["generation"].as_u64().unwrap())).collect();
    assert_eq!(gens, vec![(2, 3), (1, 2)], "{all}");
    for r in list {
        assert_eq!(r["memories_erased"], 1, "{r}");
        assert_eq!(r["observations_erased"], 0, "{r}");
        assert_eq!(r["vectors_dropped"], 1, "{r}");
        assert!(r["events_copied"].as_u64().unwrap() >= 3, "{r}");
        assert!(r["bytes_before"].as_u64().unwrap() > 0 && r["bytes_after"].as_u64().unwrap() > 0, "{r}");
        assert_eq!(r["scan"]["verified"], true, "{r}");
        assert_eq!(r["scan"]["matches"], 0, "{r}");
        assert_eq!(r["scan"]["files_sha256"].as_str().unwrap().len(), 64, "{r}");
        assert!(r["at"].as_str().unwrap().ends_with('Z'), "{r}");
    }
    assert!(!all.to_string().contains("canary"), "erased text in a receipt: {all}");
    assert!(all.get("next_cursor").is_none(), "{all}");
    let first = json(&data, &["receipts", "--limit", "1"]);
    assert_eq!(first["receipts"][0]["generation"], 3);
    assert_eq!(first["next_cursor"], "3");
    let rest = json(&data, &["receipts", "--cursor", "3"]);
    assert_eq!(rest["receipts"].as_array().unwrap().len(), 1);
    assert_eq!(rest["receipts"][0]["generation"], 2);
    let human = mnemon(&data, &["receipts"]);
    assert!(
        human.contains("gen 2 -> 3") && human.contains("gen 1 -> 2") && human.contains("verified      yes"),
        "{human}"
    );
    let bad = Command::new(BIN)
        .arg("--data")
        .arg(&data)
        .args(["--embedder", "hashing", "--json", "receipts", "--cursor", "3.x"])
        .output()
        .unwrap();
    assert!(!bad.status.success());
    let err: Value = serde_json::from_slice(&bad.stderr).unwrap();
    assert_eq!(
        (err["error"]["code"].as_str(), err["error"]["field"].as_str()),
        (Some("invalid_input"), Some("cursor"))
    );

    let server = Server::start(&data, "127.0.0.1:0", &[]);
    let (c, base) = (client(), server.base.clone());
    let e = page(&c, &base, "/ns/u1/erasure").await;
    let table = from_id(&e, "receipts");
    assert_eq!(table.matches("<tr class=\"receipt\">").count(), 2, "{e}");
    assert!(table.contains("2 → 3") && table.contains("1 → 2"), "{e}");
    assert!(table.contains("<span class=\"verified\">yes</span>"), "{e}");
    assert!(!e.contains("canary"), "erased text on the erasure page: {e}");
    let older = page(&c, &base, "/ns/u1/erasure?receipts_cursor=3").await;
    assert_eq!(from_id(&older, "receipts").matches("<tr class=\"receipt\">").count(), 1, "{older}");
    assert_eq!(get(&c, &base, "/ns/u1/erasure?receipts_cursor=nope", &[]).await.0, 400);
    server.stop();
}
