//! `gateway.pins`: where the approved tool definitions are kept and what to do with tools
//! that are not as approved.
//!
//! ```json
//! "pins": {"file": "/etc/gateway/pins.json", "onChange": "hide", "unpinned": "allow"}
//! ```

use std::path::PathBuf;

use crate::pins::{PinAction, Pins};

use super::file::{self, OnChange, Unpinned};
use super::values::Choice;
use super::{join, Problem};

/// The pin file's path and the pins read from it (none yet when it does not exist: then
/// every tool is unpinned until `gateway --pin` writes it).
pub(super) fn pins(pins: file::Pins) -> Result<(PathBuf, Pins), Problem> {
    let at = join("gateway.pins", "file");
    let file::Pins {
        file,
        on_change,
        unpinned,
    } = pins;
    let file: PathBuf = file
        .ok_or_else(|| {
            Problem::new(
                at.clone(),
                "required: where the approved definitions are kept",
            )
        })?
        .into();
    let mut pins = match std::fs::read_to_string(&file) {
        Ok(text) => Pins::parse(&text).map_err(|e| Problem::new(at, e.to_string()))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            tracing::warn!(file = %file.display(), "no pin file yet: every tool is unpinned (write one with `gateway --pin`)");
            Pins::new()
        }
        Err(e) => {
            let problem = format!("cannot read {}: {e}", file.display());
            return Err(Problem::new(at, problem));
        }
    };
    pins.on_change = match on_change.map(|Choice(c)| c) {
        None | Some(OnChange::Hide) => PinAction::Hide,
        Some(OnChange::Ask) => PinAction::Ask,
    };
    // Once tools were approved, a tool nobody approved (a renamed one, say) is hidden
    // unless the operator says otherwise; before the first `--pin`, everything is new.
    pins.unpinned = match unpinned.map(|Choice(u)| u) {
        None if pins.is_empty() => PinAction::Allow,
        None | Some(Unpinned::Hide) => PinAction::Hide,
        Some(Unpinned::Allow) => PinAction::Allow,
        Some(Unpinned::Ask) => PinAction::Ask,
    };
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
