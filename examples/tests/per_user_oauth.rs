//! An upstream that acts as each user by the user's own consent (`userAuth` of type
//! `oauth`), end to end with real parts: two `oidc-provider` authorization servers (the
//! gateway's users' issuer, and the upstream's), the gateway program, an upstream that
//! takes only the upstream issuer's tokens and records whom each call it serves was for,
//! and a scripted browser for each user.
//!
//! Each host is asked the way it can be: a 2025-11-25 host with URL-mode elicitation gets
//! `-32042` and then `notifications/elicitation/complete`; a 2026 host gets an
//! `InputRequiredResult` and its retry completes the call; a host without URL mode gets an
//! error result naming the link. After the browser flow every call reaches the upstream
//! as its own user, never as another.

use std::sync::Arc;
use std::time::Duration;

use mcp_client::{ClientError, EraChoice};
use mcp_types::protocol::*;
use mcp_types::Revision;
use serde_json::json;

mod common;
use common::browser::{jwt_claims, Browser};
use common::consent::{elicitation_url, host, text, user_token, whoami, world};

#[tokio::test]
async fn each_user_consents_once_in_the_form_their_host_can_take_and_is_then_themselves() {
    let Some(w) = world(300).await else { return };
    let alice_token = user_token(&w, "alice").await;
    let bob_token = user_token(&w, "bob").await;
    let carol_token = user_token(&w, "carol").await;
    let alice = Arc::new(Browser::new_as("alice"));
    let bob = Arc::new(Browser::new_as("bob"));
    let carol = Arc::new(Browser::new_as("carol"));

    // alice, 2025-11-25 with URL mode: -32042, then the completion notice.
    let a = host(
        &w,
        &alice_token,
        EraChoice::Legacy(Revision::V2025_11_25),
        true,
        alice.clone(),
    )
    .await;
    let mut notices = a.notifications();
    let e = match whoami(&a).await {
        Err(ClientError::Server(e)) => e,
        other => panic!("no elicitation: {other:?}"),
    };
    assert_eq!(e.code, -32042, "{e:?}");
    let (url, id) = elicitation_url(&e);
    assert!(
        url.starts_with(&format!(
            "{}/connect/start?t=",
            w.gateway_url.trim_end_matches("/mcp")
        )),
        "{url}"
    );
    let page = alice.visit(&url).await;
    assert!(
        page.body.contains("Connected"),
        "{} {}",
        page.status,
        page.body
    );
    let done = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            if let Ok(TypedNotification::ElicitationComplete(p)) = notices.recv().await {
                return p.elicitation_id;
            }
        }
    })
    .await
    .expect("the completion was announced");
    assert_eq!(done, id);
    assert_eq!(text(&whoami(&a).await.expect("served")), "alice");

    // bob, 2026 with URL mode: InputRequiredResult; the retry completes the call.
    let b = host(&w, &bob_token, EraChoice::Modern, true, bob.clone()).await;
    assert_eq!(
        text(&whoami(&b).await.expect("served after consent")),
        "bob"
    );

    // carol, 2025-06-18 without URL mode: an error result naming the link.
    let c = host(
        &w,
        &carol_token,
        EraChoice::Legacy(Revision::V2025_06_18),
        false,
        carol.clone(),
    )
    .await;
    let told = whoami(&c).await.expect("answered");
    assert_eq!(told.is_error, Some(true));
    let said = text(&told);
    let link = said
        .split_whitespace()
        .find(|w| w.contains("/connect/start?t="))
        .expect("a link");
    assert!(said.contains("call again"), "{said}");
    assert!(carol.visit(link).await.body.contains("Connected"));
    assert_eq!(text(&whoami(&c).await.expect("served")), "carol");

    // 200 calls, interleaved: each as its own user.
    let before = w.seen.0.lock().expect("seen").len();
    // At most 30 at once: each host session takes 64 unanswered requests.
    let room = Arc::new(tokio::sync::Semaphore::new(30));
    let mut calls = tokio::task::JoinSet::new();
    for n in 0..200 {
        let room = room.clone();
        let (who, h) = match n % 3 {
            0 => ("alice", a.clone()),
            1 => ("bob", b.clone()),
            _ => ("carol", c.clone()),
        };
        calls.spawn(async move {
            let _turn = room.acquire().await;
            (who, whoami(&h).await)
        });
    }
    while let Some(j) = calls.join_next().await {
        let (who, r) = j.expect("joined");
        assert_eq!(text(&r.expect("served")), who);
    }
    let seen = w.seen.0.lock().expect("seen").clone();
    assert_eq!(seen.len() - before, 200);
    for (sub, aud, _) in &seen {
        assert!(["alice", "bob", "carol"].contains(&sub.as_str()), "{sub}");
        assert!(
            aud == &json!(w.upstream_url) || aud == &json!([w.upstream_url]),
            "{aud}"
        );
    }
    // No host token reached the upstream; no upstream token reached a host or the log.
    let upstream_tokens = w.upstream_tokens.lock().expect("tokens").clone();
    for t in [&alice_token, &bob_token, &carol_token] {
        assert!(!upstream_tokens.contains(t), "a host token went upstream");
    }
    let log = std::fs::read_to_string(&w.log).expect("log");
    for t in upstream_tokens
        .iter()
        .chain([&alice_token, &bob_token, &carol_token])
    {
        assert!(!log.contains(t.as_str()), "a token in the gateway's log");
    }
    assert!(upstream_tokens
        .iter()
        .all(|t| jwt_claims(t)["iss"] == json!(w.providers.upstream)));
}

/// The `-32042` a 2025-11-25 URL-mode host gets for `tool`, and its link.
async fn consent_link(h: &mcp_client::Client, tool: &str) -> String {
    match h.call_tool(tool, Default::default()).await {
        Err(ClientError::Server(e)) if e.code == -32042 => elicitation_url(&e).0,
        other => panic!("no elicitation for {tool}: {other:?}"),
    }
}

#[tokio::test]
async fn a_link_opened_by_another_user_used_twice_altered_or_for_another_upstream_binds_nothing() {
    let Some(w) = world(300).await else { return };
    let alice_token = user_token(&w, "alice").await;
    let alice = Arc::new(Browser::new_as("alice"));
    let bob = Arc::new(Browser::new_as("bob"));
    let a = host(
        &w,
        &alice_token,
        EraChoice::Legacy(Revision::V2025_11_25),
        true,
        alice.clone(),
    )
    .await;

    // Phishing: alice's link opened in bob's browser, bob logged in there already.
    let _ = bob
        .visit(
            &consent_link(
                &host(
                    &w,
                    &user_token(&w, "bob").await,
                    EraChoice::Legacy(Revision::V2025_11_25),
                    true,
                    bob.clone(),
                )
                .await,
                "desk__whoami",
            )
            .await,
        )
        .await;
    let phished = bob.visit(&consent_link(&a, "desk__whoami").await).await;
    assert_eq!(phished.status, 403, "{}", phished.body);
    assert!(
        phished.body.contains("made for another user"),
        "{}",
        phished.body
    );
    assert!(
        phished.body.contains("Nothing was linked"),
        "{}",
        phished.body
    );
    // A flow carried midway to another browser (the login's return opened elsewhere).
    let base = w.gateway_url.trim_end_matches("/mcp");
    let midway = Browser::new_as("alice").stop_at(&format!("{base}/connect/login"));
    let stopped = midway.visit(&consent_link(&a, "desk__whoami").await).await;
    assert!(stopped.stopped, "{}", stopped.url);
    let elsewhere = Browser::new_as("alice").visit(&stopped.url).await;
    assert_eq!(elsewhere.status, 403, "{}", elsewhere.body);
    assert!(
        elsewhere.body.contains("another browser"),
        "{}",
        elsewhere.body
    );
    // alice still has no grant; bob's own grant is bob's.
    let again = consent_link(&a, "desk__whoami").await;

    // Altered in any byte: refused, nothing bound (and the link stays good for its user).
    let ticket_at = again.find("?t=").expect("ticket") + 3;
    let stranger = Browser::new_as("alice");
    for i in ticket_at..again.len() {
        let mut bytes = again.clone().into_bytes();
        bytes[i] = if bytes[i] == b'A' { b'B' } else { b'A' };
        let altered = String::from_utf8(bytes).expect("ascii");
        let page = stranger.visit(&altered).await;
        assert_eq!(page.status, 400, "byte {i}: {}", page.body);
        assert!(page.body.contains("Nothing was linked"), "{}", page.body);
    }
    // Used once: linked; used twice: refused.
    assert!(alice.visit(&again).await.body.contains("Connected"));
    let twice = alice.visit(&again).await;
    assert_eq!(twice.status, 400);
    assert!(twice.body.contains("used already"), "{}", twice.body);
    assert_eq!(text(&whoami(&a).await.expect("served")), "alice");
    // The grant is for `desk` only: `desk2` asks for its own (the gateway known to the
    // upstream's server there by dynamic registration, made at this first consent).
    let other = consent_link(&a, "desk2__whoami").await;
    assert!(alice.visit(&other).await.body.contains("Connected"));
    let log = std::fs::read_to_string(&w.log).expect("log");
    assert!(
        log.contains("registered at the upstream's authorization server"),
        "no dynamic registration"
    );
    let served = a
        .call_tool("desk2__whoami", Default::default())
        .await
        .expect("served");
    assert_eq!(text(&served.result), "alice");
    // A link of an unknown page or without a ticket.
    assert_eq!(
        alice.visit(&format!("{base}/connect/start")).await.status,
        400
    );
    assert_eq!(
        alice
            .visit(&format!("{base}/connect/elsewhere"))
            .await
            .status,
        404
    );
    let seen = w.seen.0.lock().expect("seen").clone();
    assert!(
        seen.iter()
            .all(|(sub, _, _)| sub == "alice" || sub == "bob"),
        "{seen:?}"
    );
    assert_eq!(seen.iter().filter(|(s, _, _)| s == "alice").count(), 2);
}

#[tokio::test]
async fn grants_are_sealed_at_rest_survive_a_restart_and_only_their_key_reads_them() {
    let Some(mut w) = world(300).await else {
        return;
    };
    let token = user_token(&w, "alice").await;
    let alice = Arc::new(Browser::new_as("alice"));
    let a = host(&w, &token, EraChoice::Modern, true, alice.clone()).await;
    assert_eq!(text(&whoami(&a).await.expect("served")), "alice");
    let upstream_tokens = w.upstream_tokens.lock().expect("tokens").clone();
    let file = std::fs::read_to_string(w.grants_file()).expect("grants file");
    for t in &upstream_tokens {
        let signature = t.rsplit('.').next().expect("jwt");
        assert!(!file.contains(signature), "a token in the grants file");
    }
    assert!(!file.contains("alice"), "a user's name in the grants file");

    // Restarted with the same keys: alice is still herself, with no consent asked.
    w.restart(common::consent::GRANT_KEYS).await;
    let a = host(
        &w,
        &token,
        EraChoice::Legacy(Revision::V2025_11_25),
        true,
        alice.clone(),
    )
    .await;
    assert_eq!(
        text(&whoami(&a).await.expect("served after a restart")),
        "alice"
    );

    // Restarted with another key: the grant does not open, and consent is asked again.
    w.restart("k2:AgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgI")
        .await;
    let a = host(
        &w,
        &token,
        EraChoice::Legacy(Revision::V2025_11_25),
        true,
        alice.clone(),
    )
    .await;
    let link = consent_link(&a, "desk__whoami").await;
    let log = std::fs::read_to_string(&w.log).expect("log");
    assert!(
        log.contains("does not open"),
        "the unreadable grant is logged"
    );
    assert!(alice.visit(&link).await.body.contains("Connected"));
    assert_eq!(text(&whoami(&a).await.expect("served")), "alice");

    // A tampered file: treated as empty (and said so), consent asked again.
    std::fs::write(w.grants_file(), b"{\"tampered\": ").expect("tamper");
    w.restart("k2:AgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgI")
        .await;
    let a = host(
        &w,
        &token,
        EraChoice::Legacy(Revision::V2025_11_25),
        true,
        alice.clone(),
    )
    .await;
    let link = consent_link(&a, "desk__whoami").await;
    let log = std::fs::read_to_string(&w.log).expect("log");
    assert!(
        log.contains("grant file unreadable"),
        "the tampered file is logged"
    );
    assert!(alice.visit(&link).await.body.contains("Connected"));
    assert_eq!(text(&whoami(&a).await.expect("served")), "alice");

    // An operator forgets alice's grant: she is asked again (here, after a restart that
    // drops the token the gateway held in memory).
    let forget = || async {
        let out = tokio::process::Command::new(common::example("gateway"))
            .args([
                "--config",
                &w.dir.join("gateway.json").display().to_string(),
            ])
            .args(["--forget-grant", "desk", "--subject", "alice"])
            .env("GW_SECRET", common::consent::SECRET)
            .env(
                "GW_GRANT_KEYS",
                "k2:AgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgI",
            )
            .env("GW_CI_KEY", common::consent::CI_KEY)
            .output()
            .await
            .expect("forget");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert_eq!(forget().await.trim(), "forgot the grant of alice for desk");
    assert_eq!(forget().await.trim(), "no grant of alice for desk was kept");
    w.restart("k2:AgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgI")
        .await;
    let a = host(
        &w,
        &token,
        EraChoice::Legacy(Revision::V2025_11_25),
        true,
        alice.clone(),
    )
    .await;
    let _ = consent_link(&a, "desk__whoami").await;
}

#[tokio::test]
async fn a_grant_is_refreshed_without_the_user_and_a_revoked_one_asks_again() {
    // Access tokens good for 4 s: renewed by refresh before they end.
    let Some(w) = world(4).await else { return };
    let token = user_token(&w, "alice").await;
    let alice = Arc::new(Browser::new_as("alice"));
    let a = host(
        &w,
        &token,
        EraChoice::Legacy(Revision::V2025_11_25),
        true,
        alice.clone(),
    )
    .await;
    let link = consent_link(&a, "desk__whoami").await;
    assert!(alice.visit(&link).await.body.contains("Connected"));
    let distinct = || {
        let mut t: Vec<String> = w
            .upstream_tokens
            .lock()
            .expect("tokens")
            .iter()
            .filter(|t| jwt_claims(t)["sub"] == json!("alice"))
            .cloned()
            .collect();
        t.sort();
        t.dedup();
        t.len()
    };
    // Calls go on, served as alice, until the upstream has seen a second token of hers:
    // the grant was refreshed, and nobody was asked.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while distinct() < 2 {
        assert!(tokio::time::Instant::now() < deadline, "never refreshed");
        assert_eq!(text(&whoami(&a).await.expect("served")), "alice");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // Revoked at the authorization server: calls go on while the last token lasts, then
    // the next one asks for consent again — never another error.
    assert!(w.providers.revoke_grants("alice").await >= 1);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let link = loop {
        assert!(tokio::time::Instant::now() < deadline, "never asked again");
        match whoami(&a).await {
            Ok(r) => assert_eq!(text(&r), "alice"),
            Err(ClientError::Server(e)) if e.code == -32042 => break elicitation_url(&e).0,
            Err(e) => panic!("an error instead of a new consent: {e:?}"),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert!(alice.visit(&link).await.body.contains("Connected"));
    assert_eq!(text(&whoami(&a).await.expect("served")), "alice");
}

#[tokio::test]
async fn a_user_no_issuer_names_is_told_they_cannot_consent() {
    let Some(w) = world(300).await else { return };
    let nobody = Arc::new(Browser::new_as("ci-bot"));
    for era in [EraChoice::Modern, EraChoice::Legacy(Revision::V2025_11_25)] {
        let ci = host(&w, common::consent::CI_KEY, era, true, nobody.clone()).await;
        let r = whoami(&ci).await.expect("answered");
        assert_eq!(r.is_error, Some(true));
        let said = text(&r);
        assert!(
            said.contains("upstream `desk`") && said.contains("cannot give it"),
            "{said}"
        );
        assert!(!said.contains("/connect/"), "{said}");
    }
    assert!(w.seen.0.lock().expect("seen").is_empty());
}
