//! The tests of `flights.rs`: answers, a down upstream, parked calls resumed once and only
//! for their own request, and retries of calls parked on a replica gone.
use super::super::test_parts::{connect, flights, ids, in_process, parts, request};
use super::*;

fn texts(v: &Value) -> Vec<&str> {
    v["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|b| b["text"].as_str())
        .collect()
}

fn is_invalid_params(r: Result<Resumed, ClientError>) -> bool {
    matches!(r, Err(ClientError::Server(e)) if e.code == codes::INVALID_PARAMS)
}

#[tokio::test]
async fn a_request_to_a_connected_upstream_gets_its_answer() {
    let (pool, catalog) = parts(vec![in_process("alpha", vec!["echo"])]);
    let i = ids(1)[0];
    connect(&pool, i).await;
    let flights = flights(pool.clone(), catalog);
    let req = request().await;
    let params = json!({"name": "echo", "arguments": {}});
    let answer = flights
        .upstream_call(i, method::TOOLS_CALL, params, &req.ctx)
        .await
        .expect("answered");
    assert_eq!(texts(&answer), ["ran echo"]);
    // Typed, and made the gateway's by `tidy`.
    let params = json!({"name": "other", "arguments": {}});
    let typed = flights
        .relay_typed::<CallToolResult>(&req.ctx, i, method::TOOLS_CALL, params, |r| {
            r.is_error = Some(false)
        })
        .await
        .expect("answered");
    match typed {
        Outcome::Complete(r) => {
            assert_eq!(r.is_error, Some(false));
            assert!(matches!(&r.content[..], [ContentBlock::Text(t)] if t.text == "ran other"));
        }
        _ => panic!("not a result"),
    }
    pool.close_all().await;
}

#[tokio::test]
async fn a_request_to_a_down_upstream_says_it_is_unavailable() {
    let (pool, catalog) = parts(vec![in_process("alpha", vec!["echo"])]);
    let i = ids(1)[0];
    let flights = flights(pool, catalog);
    let req = request().await;
    let params = json!({"name": "echo", "arguments": {}});
    let e = flights
        .upstream_call(i, method::TOOLS_CALL, params, &req.ctx)
        .await
        .expect_err("nothing to call");
    assert!(
        matches!(&e, ClientError::Unavailable(why) if why.contains("`alpha`")),
        "{e}"
    );
}

#[tokio::test]
async fn an_unknown_request_state_is_invalid_params() {
    let (pool, catalog) = parts(vec![in_process("alpha", vec![])]);
    let flights = flights(pool, catalog);
    let req = request().await;
    let unknown = format!("{STATE_PREFIX}nobody-parked-this");
    let echo = RequestBinding::of("alpha", method::TOOLS_CALL, "echo");
    assert!(is_invalid_params(flights.resume(
        &unknown,
        method::TOOLS_CALL,
        echo,
        &req.ctx
    )));
    assert!(is_invalid_params(flights.resume(
        "",
        method::TOOLS_CALL,
        echo,
        &req.ctx
    )));
}

#[tokio::test]
async fn a_parked_flight_resumes_once_and_only_for_its_own_request() {
    let (pool, catalog) = parts(vec![in_process("alpha", vec!["echo"])]);
    let i = ids(1)[0];
    let client = connect(&pool, i).await;
    let flights = flights(pool.clone(), catalog);
    let req = request().await;
    // As `upstream_call` sends it.
    let launch = |flights: &Flights| {
        let params = json!({"name": "echo", "arguments": {}});
        let raw = flights
            .hop_value_params(i, method::TOOLS_CALL, params, &req.ctx)
            .expect("params");
        let mut params = RawObject::from_raw(&raw).expect("object").into_owned();
        client.add_envelope(&mut params);
        let link = flights.links().link_now(i, &req.ctx).expect("linked");
        flights.launch(i, link, method::TOOLS_CALL, params, &req.ctx)
    };
    let state = flights.park(launch(&flights), &req.ctx).expect("parked");
    let echo = RequestBinding::of("alpha", method::TOOLS_CALL, "echo");
    // For another request, or by another principal: refused, and left parked for its own.
    let prompt = RequestBinding::of("alpha", method::PROMPTS_GET, "echo");
    assert!(is_invalid_params(flights.resume(
        &state,
        method::PROMPTS_GET,
        prompt,
        &req.ctx
    )));
    let other = RequestBinding::of("alpha", method::TOOLS_CALL, "other");
    assert!(is_invalid_params(flights.resume(
        &state,
        method::TOOLS_CALL,
        other,
        &req.ctx
    )));
    let Ok(Resumed::Flight(flight)) = flights.resume(&state, method::TOOLS_CALL, echo, &req.ctx)
    else {
        panic!("not resumed");
    };
    let answer = flights.drive(flight, &req.ctx).await.expect("answered");
    let answer: Value = serde_json::from_str(answer.get()).expect("json");
    assert_eq!(texts(&answer), ["ran echo"]);
    assert!(
        is_invalid_params(flights.resume(&state, method::TOOLS_CALL, echo, &req.ctx)),
        "already used"
    );
    pool.close_all().await;
}

#[tokio::test]
async fn a_retry_of_a_call_parked_on_a_replica_gone_says_so() {
    use mcp_server::seal::{ReplicaId, SealKey, Sealer};
    let (pool, catalog) = parts(vec![in_process("alpha", vec!["echo"])]);
    let key = || SealKey::new("shared", &[3; 32]).expect("key");
    let here = Arc::new(Sealer::new(vec![key()], ReplicaId(1)).expect("sealer"));
    let gone = Sealer::new(vec![key()], ReplicaId(2)).expect("sealer");
    let flights = Flights::new(
        super::super::test_parts::links(pool, catalog),
        Arc::default(),
        here,
        false,
        super::super::downgrade::Downgrade::default(),
    );
    let req = request().await;
    let echo = RequestBinding::of("alpha", method::TOOLS_CALL, "echo");
    let wait = Duration::from_secs(60);
    let state = request_state::seal(&gone, &Held::Slot(5), wait, None, echo).expect("sealed");
    let e = match flights.resume(&state, method::TOOLS_CALL, echo, &req.ctx) {
        Err(ClientError::Server(e)) => e,
        _ => panic!("resumed a call parked elsewhere"),
    };
    assert_eq!(e.code, codes::INVALID_PARAMS);
    assert!(e.message.contains("replica 2"), "{}", e.message);
    assert!(
        e.message.contains("again without requestState"),
        "{}",
        e.message
    );
}
