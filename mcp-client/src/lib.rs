//! Placeholder: see ARCHITECTURE.md for what this crate will hold.
