//! `gateway.pins`: where the approved tool definitions are kept and what to do with tools
//! that are not as approved.
//!
//! ```json
//! "pins": {"file": "/etc/gateway/pins.json", "onChange": "hide", "unpinned": "allow"}
//! ```

use serde_json::Value;

use crate::pins::{PinAction, Pins};

use super::{keys, known_keys, Fields, Problem};

fn action(
    f: &Fields<'_>,
    field: &str,
    default: PinAction,
    ask_or_hide_only: bool,
) -> Result<PinAction, Problem> {
    match f.string(field)?.as_deref() {
        None => Ok(default),
        Some("hide") => Ok(PinAction::Hide),
        Some("ask") => Ok(PinAction::Ask),
        Some("allow") if !ask_or_hide_only => Ok(PinAction::Allow),
        Some(_) if ask_or_hide_only => Err(f.problem(field, "must be \"hide\" or \"ask\"")),
        Some(_) => Err(f.problem(field, "must be \"allow\", \"hide\" or \"ask\"")),
    }
}

/// The pin file's path and the pins read from it (none yet when it does not exist: then
/// every tool is unpinned until `gateway --pin` writes it).
pub(super) fn pins(v: &Value) -> Result<(std::path::PathBuf, Pins), Problem> {
    let at = "gateway.pins";
    let obj = v
        .as_object()
        .ok_or_else(|| Problem::new(at, "must be an object"))?;
    known_keys(obj, &keys::PINS, at)?;
    let f = Fields { obj, at: at.into() };
    let file: std::path::PathBuf = f
        .string("file")?
        .ok_or_else(|| f.problem("file", "required: where the approved definitions are kept"))?
        .into();
    let mut pins = match std::fs::read_to_string(&file) {
        Ok(text) => Pins::parse(&text).map_err(|e| f.problem("file", e.to_string()))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            tracing::warn!(file = %file.display(), "no pin file yet: every tool is unpinned (write one with `gateway --pin`)");
            Pins::new()
        }
        Err(e) => return Err(f.problem("file", format!("cannot read {}: {e}", file.display()))),
    };
    pins.on_change = action(&f, "onChange", PinAction::Hide, true)?;
    // Once tools were approved, a tool nobody approved (a renamed one, say) is hidden
    // unless the operator says otherwise; before the first `--pin`, everything is new.
    let default = match pins.is_empty() {
        true => PinAction::Allow,
        false => PinAction::Hide,
    };
    pins.unpinned = action(&f, "unpinned", default, false)?;
    Ok((file, pins))
}

#[cfg(test)]
mod tests {
    use crate::config::parse;
    use crate::pins::PinAction;

    #[test]
    fn pins_are_read_with_their_actions() {
        let path = std::env::temp_dir().join(format!("mcp-proxy-pins-{}.json", std::process::id()));
        std::fs::write(
            &path,
            r#"{"version": 1, "tools": {"fs/read": {"description": "sha256:00"}}}"#,
        )
        .expect("write");
        let text = format!(
            r#"{{"mcpServers": {{}}, "gateway": {{"pins": {{"file": {:?}, "onChange": "ask", "unpinned": "hide"}}}}}}"#,
            path.display().to_string()
        );
        let g = parse(&text, "c.json").expect("valid");
        let pins = g.options.pins.expect("pins");
        assert_eq!(
            (pins.len(), pins.on_change, pins.unpinned),
            (1, PinAction::Ask, PinAction::Hide)
        );
        assert_eq!(g.pin_file.as_deref(), Some(path.as_path()));
        let _ = std::fs::remove_file(&path);
        let missing =
            r#"{"mcpServers": {}, "gateway": {"pins": {"file": "/nonexistent/pins.json"}}}"#;
        let g = parse(missing, "c.json").expect("a missing file is no pins yet");
        assert!(g
            .options
            .pins
            .is_some_and(|p| p.is_empty() && p.on_change == PinAction::Hide));
        for (bad, at) in [
            (r#"{"onChange": "ask"}"#, "gateway.pins.file"),
            (
                r#"{"file": "/x", "onChange": "allow"}"#,
                "gateway.pins.onChange",
            ),
            (
                r#"{"file": "/x", "unpinned": "maybe"}"#,
                "gateway.pins.unpinned",
            ),
            (
                r#"{"file": "/x", "onchange": "ask"}"#,
                "gateway.pins.onchange",
            ),
        ] {
            let text = format!(r#"{{"mcpServers": {{}}, "gateway": {{"pins": {bad}}}}}"#);
            assert_eq!(parse(&text, "c.json").expect_err(bad).location, at, "{bad}");
        }
    }
}
