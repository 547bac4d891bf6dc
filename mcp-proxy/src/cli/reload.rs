//! Live configuration: on `SIGHUP`, and when the configuration file changes (watched
//! with `notify`, its folder, so an editor's write-and-rename is seen), the file is read
//! and checked whole; a good one is applied with [`Live::reload`] (an upstream whose own
//! entry in `mcpServers` is as before keeps running), a bad one is refused with the error
//! logged and the configuration in force keeps serving. `gateway.auth`,
//! `gateway.stdioSubject` and `gateway.http` are the listener's: a change of theirs needs a
//! restart.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use notify::Watcher;
use serde_json::Value;
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::mpsc;

use crate::live::Live;

/// How long a burst of file events is waited out before the file is read.
const SETTLE: Duration = Duration::from_millis(200);

/// Watches for reloads of `path` until the process ends; `loaded` is the text the
/// configuration in force was read from (an edit made while the upstreams started is
/// then seen as one); `drain` bounds how long calls in flight on a closing upstream get.
pub(super) fn watch(live: Live, path: String, loaded: String, drain: Duration) {
    let (tx, mut rx) = mpsc::unbounded_channel::<&'static str>();
    let watcher = file_watcher(Path::new(&path), tx.clone());
    let tx_start = tx.clone();
    match signal(SignalKind::hangup()) {
        Ok(mut hup) => {
            tokio::spawn(async move {
                while hup.recv().await.is_some() {
                    if tx.send("SIGHUP").is_err() {
                        return;
                    }
                }
            });
        }
        Err(e) => eprintln!("gateway: cannot listen for SIGHUP: {e}"),
    }
    tokio::spawn(async move {
        let _watcher = watcher;
        let mut in_force = loaded;
        // Changed before the watch began (the upstreams take a while to start).
        if std::fs::read_to_string(&path).is_ok_and(|t| t != in_force) {
            let _ = tx_start.send("the file changed");
        }
        while let Some(why) = rx.recv().await {
            tokio::time::sleep(SETTLE).await;
            while rx.try_recv().is_ok() {}
            let Ok(text) = std::fs::read_to_string(&path) else {
                eprintln!("gateway: {why}: cannot read {path}; the configuration in force stays");
                continue;
            };
            if text == in_force {
                continue;
            }
            if apply(&live, &path, &in_force, &text, why, drain).await {
                in_force = text;
            }
        }
    });
}

/// The entry a Kubernetes volume (a ConfigMap, a Secret) swaps to update its files at once:
/// `config.json` is a link through `..data`, and only `..data` changes.
const KUBERNETES_DATA: &str = "..data";

/// A watcher of the folder holding `path`, telling `tx` when `path` may have changed: an
/// event naming it, or the `..data` link of a Kubernetes volume.
fn file_watcher(path: &Path, tx: mpsc::UnboundedSender<&'static str>) -> Option<impl Watcher> {
    let name = path.file_name()?.to_owned();
    let folder: PathBuf = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
        _ => PathBuf::from("."),
    };
    let handler = move |event: notify::Result<notify::Event>| {
        let ours = event.is_ok_and(|e| {
            e.paths.iter().any(|p| {
                p.file_name()
                    .is_some_and(|f| f == name.as_os_str() || f == KUBERNETES_DATA)
            })
        });
        if ours {
            let _ = tx.send("the file changed");
        }
    };
    let mut watcher = match notify::recommended_watcher(handler) {
        Ok(w) => w,
        Err(e) => {
            eprintln!(
                "gateway: cannot watch {}: {e}; SIGHUP reloads",
                path.display()
            );
            return None;
        }
    };
    if let Err(e) = watcher.watch(&folder, notify::RecursiveMode::NonRecursive) {
        eprintln!(
            "gateway: cannot watch {}: {e}; SIGHUP reloads",
            folder.display()
        );
        return None;
    }
    Some(watcher)
}

/// Checks `text` and applies it; whether it is now in force.
async fn apply(
    live: &Live,
    path: &str,
    before: &str,
    text: &str,
    why: &str,
    drain: Duration,
) -> bool {
    let mut g = match crate::config::parse(text, path) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("gateway: {why}: configuration refused, the one in force keeps serving: {e}");
            return false;
        }
    };
    let (old, new) = (json(before), json(text));
    if ["auth", "stdioSubject", "http", "cluster", "audit"]
        .iter()
        .any(|k| old.pointer(&format!("/gateway/{k}")) != new.pointer(&format!("/gateway/{k}")))
    {
        eprintln!("gateway: gateway.auth, gateway.stdioSubject, gateway.http, gateway.cluster and gateway.audit take effect at the next start");
    }
    // The audit log in force goes on: one writer, one chain.
    g.options.audit = live.current().audit_log().cloned();
    // The cluster is the one in force: its keys, its link to the other replicas.
    (g.options.sealer, g.options.replicas) = live.current().cluster();
    // The gateway-wide settings an upstream's connection is opened with (timeouts, say)
    // count as its own; views, pins, auth and the stdio subject do not.
    let connection = |v: &Value| {
        let mut g = v.get("gateway").cloned().unwrap_or(Value::Null);
        if let Some(o) = g.as_object_mut() {
            for k in ["views", "pins", "auth", "stdioSubject", "http", "cluster"] {
                o.remove(k);
            }
        }
        g
    };
    let same_gateway = connection(&old) == connection(&new);
    let unchanged: HashSet<String> = g
        .upstreams
        .iter()
        .map(|u| u.key.clone())
        .filter(|k| {
            let entry = |v: &Value| v.get("mcpServers").and_then(|s| s.get(k)).cloned();
            same_gateway && entry(&old).is_some() && entry(&old) == entry(&new)
        })
        .collect();
    if old.pointer("/gateway/views") == new.pointer("/gateway/views") {
        // The same views: only hosts whose view reaches an upstream that came or went hear.
        g.options.views = live.current().views();
    }
    match live
        .reload(
            g.upstreams,
            g.options,
            |c| unchanged.contains(&c.key),
            drain,
        )
        .await
    {
        Ok(r) => {
            eprintln!(
                "gateway: {why}: configuration reloaded; started: [{}], closed: [{}]",
                r.started.join(", "),
                r.closed.join(", ")
            );
            true
        }
        Err(e) => {
            eprintln!("gateway: {why}: configuration refused, the one in force keeps serving: {e}");
            false
        }
    }
}

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or(Value::Null)
}
