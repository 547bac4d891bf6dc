//! The twenty hand-written tools the requests are meant for.

use serde_json::{json, Map, Value};

/// A tool definition: `properties` are (name, type, description).
fn tool(
    name: &str,
    title: Option<&str>,
    description: &str,
    properties: &[(&str, &str, &str)],
    required: &[&str],
) -> Value {
    let mut props = Map::new();
    for (p, ty, d) in properties {
        props.insert((*p).to_owned(), json!({"type": ty, "description": d}));
    }
    let mut t = json!({
        "name": name,
        "description": description,
        "inputSchema": {"type": "object", "properties": props, "required": required},
    });
    if let (Some(title), Some(obj)) = (title, t.as_object_mut()) {
        obj.insert("title".into(), json!(title));
    }
    t
}

/// Twenty realistic tool definitions from varied domains, namespaced as a gateway names
/// them (`github__create_issue`): `name`, `title` (or `annotations.title`), `description`
/// and an `inputSchema` with properties.
pub fn hand_written() -> Vec<Value> {
    let mut postgres = tool(
        "postgres__run_query",
        None,
        "Run a read-only SQL query against the PostgreSQL database and return the \
         resulting rows as JSON. Use it to look up or aggregate data stored in the \
         database's tables.",
        &[
            ("sql", "string", "The SQL statement (SELECT only)."),
            ("params", "array", "Values for $1, $2, … placeholders."),
            (
                "max_rows",
                "integer",
                "At most this many rows are returned.",
            ),
        ],
        &["sql"],
    );
    if let Some(obj) = postgres.as_object_mut() {
        obj.insert(
            "annotations".into(),
            json!({"title": "Run SQL query", "readOnlyHint": true}),
        );
    }
    vec![
        tool(
            "github__create_issue",
            Some("Create issue"),
            "Create a new issue in a GitHub repository. Use it to report a bug, request a \
             feature or track a task; the body accepts Markdown.",
            &[
                ("owner", "string", "The account owning the repository."),
                ("repo", "string", "The repository's name."),
                ("title", "string", "The issue's title."),
                ("body", "string", "The issue's text, in Markdown."),
                ("labels", "array", "Labels to apply."),
                ("assignees", "array", "Logins to assign."),
            ],
            &["owner", "repo", "title"],
        ),
        tool(
            "slack__post_message",
            Some("Post message"),
            "Post a message to a Slack channel or direct message as the bot user. \
             Supports mrkdwn formatting and replying in a thread.",
            &[
                ("channel", "string", "Channel id or name, e.g. #general."),
                ("text", "string", "The message."),
                ("thread_ts", "string", "Reply in this thread."),
            ],
            &["channel", "text"],
        ),
        postgres,
        tool(
            "calendar__create_event",
            Some("Create calendar event"),
            "Create an event on the user's Google Calendar with a start and end time, \
             attendees and an optional video call link. Invitations are sent to the \
             attendees.",
            &[
                ("summary", "string", "The event's title."),
                ("start", "string", "Start time, RFC 3339."),
                ("end", "string", "End time, RFC 3339."),
                ("attendees", "array", "Email addresses to invite."),
                ("location", "string", "Where it takes place."),
                ("description", "string", "Details shown in the invitation."),
            ],
            &["summary", "start", "end"],
        ),
        tool(
            "weather__forecast",
            Some("Weather forecast"),
            "Get the weather forecast for a location: temperature, chance of \
             precipitation, wind and conditions, hour by hour or day by day for up to 7 \
             days.",
            &[
                ("location", "string", "A city name or latitude,longitude."),
                ("days", "integer", "How many days ahead (1-7)."),
                ("units", "string", "metric or imperial."),
            ],
            &["location"],
        ),
        tool(
            "gmail__send_email",
            Some("Send email"),
            "Send an email from the user's Gmail account. Accepts recipients (to, cc, \
             bcc), a subject, a plain-text or HTML body and file attachments.",
            &[
                ("to", "array", "Recipients."),
                ("cc", "array", "Copied recipients."),
                ("subject", "string", "The subject line."),
                ("body", "string", "The message body."),
                ("attachments", "array", "Paths of files to attach."),
            ],
            &["to", "subject", "body"],
        ),
        tool(
            "files__search_files",
            Some("Search files"),
            "Search the contents of files under a directory for a text or \
             regular-expression pattern, like grep. Returns the matching lines with file \
             paths and line numbers.",
            &[
                ("path", "string", "The directory to search."),
                ("pattern", "string", "Text or regular expression."),
                (
                    "include",
                    "string",
                    "Glob of file names to include, e.g. *.rs.",
                ),
                ("case_sensitive", "boolean", "Match case exactly."),
            ],
            &["path", "pattern"],
        ),
        tool(
            "stripe__refund_payment",
            Some("Refund payment"),
            "Refund a Stripe payment, in full or for part of the amount. The money goes \
             back to the customer's original payment method.",
            &[
                (
                    "payment_intent",
                    "string",
                    "The payment intent's id (pi_…).",
                ),
                (
                    "amount",
                    "integer",
                    "In the smallest currency unit; all if absent.",
                ),
                (
                    "reason",
                    "string",
                    "duplicate, fraudulent or requested_by_customer.",
                ),
            ],
            &["payment_intent"],
        ),
        tool(
            "translate__translate_text",
            Some("Translate text"),
            "Translate text from one language to another. The source language is \
             detected when not given; the target is an ISO 639-1 code such as es, fr or \
             ja.",
            &[
                ("text", "string", "The text to translate."),
                ("target_language", "string", "ISO 639-1 code."),
                (
                    "source_language",
                    "string",
                    "ISO 639-1 code; detected if absent.",
                ),
                ("formality", "string", "formal, informal or default."),
            ],
            &["text", "target_language"],
        ),
        tool(
            "maps__directions",
            Some("Get directions"),
            "Get driving, walking, cycling or public-transit directions between an origin \
             and a destination, with the distance, the travel time and turn-by-turn steps.",
            &[
                ("origin", "string", "Address or place name."),
                ("destination", "string", "Address or place name."),
                ("mode", "string", "driving, walking, bicycling or transit."),
                ("departure_time", "string", "When to leave; now if absent."),
            ],
            &["origin", "destination"],
        ),
        tool(
            "kubernetes__scale_deployment",
            Some("Scale deployment"),
            "Scale a Kubernetes deployment to a given number of replicas in a namespace. \
             Use 0 to stop all of its pods.",
            &[
                ("namespace", "string", "The deployment's namespace."),
                ("name", "string", "The deployment's name."),
                ("replicas", "integer", "The number of pods wanted."),
            ],
            &["name", "replicas"],
        ),
        tool(
            "notion__create_page",
            Some("Create page"),
            "Create a new page in a Notion workspace, under a parent page or in a \
             database, with a title and Markdown content.",
            &[
                ("parent_id", "string", "The parent page's or database's id."),
                ("title", "string", "The page's title."),
                ("content", "string", "The body, in Markdown."),
            ],
            &["parent_id", "title"],
        ),
        tool(
            "spotify__play_track",
            Some("Play track"),
            "Start playing a song, album or playlist on the user's active Spotify device. \
             Searches by name when no Spotify URI is given.",
            &[
                (
                    "query",
                    "string",
                    "What to play, e.g. an artist and a song.",
                ),
                ("uri", "string", "A Spotify URI; overrides query."),
                (
                    "device_id",
                    "string",
                    "The device; the active one if absent.",
                ),
            ],
            &[],
        ),
        tool(
            "currency__convert",
            Some("Convert currency"),
            "Convert an amount of money from one currency to another at the latest \
             exchange rate. Currencies are three-letter ISO 4217 codes such as USD, EUR or \
             JPY.",
            &[
                ("amount", "number", "The amount to convert."),
                ("from", "string", "ISO 4217 code."),
                ("to", "string", "ISO 4217 code."),
            ],
            &["amount", "from", "to"],
        ),
        tool(
            "github__merge_pull_request",
            Some("Merge pull request"),
            "Merge a pull request in a GitHub repository using a merge commit, squash or \
             rebase. Fails if required checks or reviews have not passed.",
            &[
                ("owner", "string", "The account owning the repository."),
                ("repo", "string", "The repository's name."),
                ("pull_number", "integer", "The pull request's number."),
                ("merge_method", "string", "merge, squash or rebase."),
                ("commit_title", "string", "Title of the merge commit."),
            ],
            &["owner", "repo", "pull_number"],
        ),
        tool(
            "twilio__send_sms",
            Some("Send SMS"),
            "Send an SMS text message to a phone number from your Twilio number. Numbers \
             are in E.164 format, e.g. +14155550100.",
            &[
                ("to", "string", "The recipient's number."),
                ("body", "string", "The message, up to 1600 characters."),
                ("from", "string", "One of your Twilio numbers."),
            ],
            &["to", "body"],
        ),
        tool(
            "web__fetch_url",
            Some("Fetch URL"),
            "Fetch a web page by its URL and return its content as Markdown, with scripts \
             and styles removed. Long pages are truncated to max_length characters.",
            &[
                ("url", "string", "http or https URL."),
                ("max_length", "integer", "Characters to keep."),
                ("raw", "boolean", "Return the HTML as it is."),
            ],
            &["url"],
        ),
        tool(
            "pagerduty__acknowledge_incident",
            Some("Acknowledge incident"),
            "Acknowledge a triggered PagerDuty incident so that it stops escalating and \
             paging the on-call responders.",
            &[
                ("incident_id", "string", "The incident's id."),
                ("from_email", "string", "Email of the acknowledging user."),
            ],
            &["incident_id", "from_email"],
        ),
        tool(
            "drive__share_file",
            Some("Share file"),
            "Share a Google Drive file or folder with a person or group by email address, \
             granting them viewer, commenter or editor access. Optionally sends them a \
             notification.",
            &[
                ("file_id", "string", "The file's or folder's id."),
                ("email", "string", "Who to share with."),
                ("role", "string", "reader, commenter or writer."),
                ("notify", "boolean", "Send a notification email."),
            ],
            &["file_id", "email", "role"],
        ),
        tool(
            "shell__run_command",
            Some("Run shell command"),
            "Run a command in a shell on the host (bash on Linux and macOS, PowerShell on \
             Windows) and return its exit code, standard output and standard error.",
            &[
                ("command", "string", "The command line."),
                ("cwd", "string", "Working directory."),
                (
                    "timeout_secs",
                    "integer",
                    "Kill it after this many seconds.",
                ),
                ("env", "object", "Extra environment variables."),
            ],
            &["command"],
        ),
    ]
}
