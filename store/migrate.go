package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// migration is one schema step. Statements are written once for both drivers;
// {{ts}} and {{pk}} expand to the driver's timestamp and identity key types.
type migration struct {
	version int
	name    string
	stmts   []string
}

// migrations are applied in order and never edited once released: add a new
// step instead.
var migrations = []migration{
	{
		version: 1,
		name:    "initial",
		stmts: []string{
			// Item state. GitHub node ids are globally unique, so item_id alone
			// is the key; project_id records which project the item is on.
			`CREATE TABLE items (
				item_id          TEXT PRIMARY KEY,
				project_id       TEXT NOT NULL DEFAULT '',
				issue_number     BIGINT NOT NULL DEFAULT 0,
				repo             TEXT NOT NULL DEFAULT '',
				last_legal_state TEXT NOT NULL DEFAULT '',
				legal_at         {{ts}},
				rejected_state   TEXT NOT NULL DEFAULT '',
				lock_holder      TEXT NOT NULL DEFAULT '',
				lock_since       {{ts}},
				updated_at       {{ts}} NOT NULL,
				version          BIGINT NOT NULL
			)`,
			`CREATE INDEX items_project ON items (project_id)`,
			`CREATE INDEX items_issue ON items (repo, issue_number)`,
			`CREATE TABLE audit_log (
				id           {{pk}},
				at           {{ts}} NOT NULL,
				delivery_id  TEXT NOT NULL DEFAULT '',
				project_id   TEXT NOT NULL DEFAULT '',
				item_id      TEXT NOT NULL DEFAULT '',
				issue_number BIGINT NOT NULL DEFAULT 0,
				repo         TEXT NOT NULL DEFAULT '',
				actor        TEXT NOT NULL DEFAULT '',
				actor_kind   TEXT NOT NULL DEFAULT '',
				from_state   TEXT NOT NULL DEFAULT '',
				to_state     TEXT NOT NULL DEFAULT '',
				verdict      TEXT NOT NULL,
				rule         TEXT NOT NULL DEFAULT '',
				reason       TEXT NOT NULL DEFAULT '',
				cause        TEXT NOT NULL DEFAULT ''
			)`,
			`CREATE INDEX audit_log_at ON audit_log (at, id)`,
			`CREATE INDEX audit_log_issue ON audit_log (issue_number, at, id)`,
			`CREATE INDEX audit_log_item ON audit_log (item_id, at, id)`,
			`CREATE INDEX audit_log_delivery ON audit_log (delivery_id)`,
			`CREATE TABLE deliveries (
				delivery_id TEXT PRIMARY KEY,
				event       TEXT NOT NULL DEFAULT '',
				received_at {{ts}} NOT NULL
			)`,
			`CREATE INDEX deliveries_received_at ON deliveries (received_at)`,
			`CREATE TABLE violation_comments (
				repo         TEXT NOT NULL,
				issue_number BIGINT NOT NULL,
				comment_id   BIGINT NOT NULL DEFAULT 0,
				node_id      TEXT NOT NULL DEFAULT '',
				count        BIGINT NOT NULL DEFAULT 0,
				body         TEXT NOT NULL DEFAULT '',
				updated_at   {{ts}} NOT NULL,
				PRIMARY KEY (repo, issue_number)
			)`,
			`CREATE TABLE cursors (
				name       TEXT PRIMARY KEY,
				value      TEXT NOT NULL,
				updated_at {{ts}} NOT NULL
			)`,
		},
	},
	{
		version: 2,
		name:    "item history",
		stmts: []string{
			// The board value the item's judged history ends in, so that a reported change is
			// judged from the state it actually left (enforce, policy.Sequence).
			`ALTER TABLE items ADD COLUMN observed_state TEXT NOT NULL DEFAULT ''`,
			`ALTER TABLE items ADD COLUMN observed_at {{ts}}`,
			`ALTER TABLE items ADD COLUMN gap_since {{ts}}`,
			`ALTER TABLE items ADD COLUMN automate_state TEXT NOT NULL DEFAULT ''`,
			`ALTER TABLE items ADD COLUMN revert_pending TEXT NOT NULL DEFAULT ''`,
			`UPDATE items SET observed_state = CASE WHEN rejected_state <> '' THEN rejected_state ELSE last_legal_state END,
				observed_at = legal_at`,
			// Every reported change of an item, recorded at intake before GitHub is answered,
			// then judged in the order of the item's history.
			`CREATE TABLE observations (
				delivery_id TEXT PRIMARY KEY,
				item_id     TEXT NOT NULL,
				from_known  BOOLEAN NOT NULL DEFAULT FALSE,
				from_state  TEXT NOT NULL DEFAULT '',
				to_state    TEXT NOT NULL DEFAULT '',
				actor       TEXT NOT NULL DEFAULT '',
				at          {{ts}} NOT NULL,
				received_at {{ts}} NOT NULL,
				status      TEXT NOT NULL DEFAULT 'pending',
				judged_at   {{ts}},
				verdict     TEXT NOT NULL DEFAULT '',
				actor_kind  TEXT NOT NULL DEFAULT '',
				legal_from  TEXT NOT NULL DEFAULT '',
				rule        TEXT NOT NULL DEFAULT '',
				reason      TEXT NOT NULL DEFAULT '',
				recovery    TEXT NOT NULL DEFAULT '',
				explained   BOOLEAN NOT NULL DEFAULT FALSE
			)`,
			`CREATE INDEX observations_item ON observations (item_id, status)`,
			`CREATE INDEX observations_received ON observations (received_at)`,
		},
	},
	{
		version: 3,
		name:    "drop deliveries",
		stmts: []string{
			// Deliveries are recorded as observations (version 2); the first version's table of
			// delivery ids was no longer written.
			`DROP INDEX IF EXISTS deliveries_received_at`,
			`DROP TABLE IF EXISTS deliveries`,
		},
	},
	{
		version: 4,
		name:    "violation comments per actor",
		stmts: []string{
			// One violation comment per issue and actor: another actor's violation gets a
			// comment of its own, since GitHub notifies on a new comment and never on an edit.
			// The first version's table stays as it was, so that a replica of an older build
			// still running during a rolling upgrade keeps working with it; its rows are copied
			// with actor '' (enforce settles an interrupted posting of one, never coalesces
			// into it).
			`CREATE TABLE violation_comments_by_actor (
				repo         TEXT NOT NULL,
				issue_number BIGINT NOT NULL,
				actor        TEXT NOT NULL DEFAULT '',
				comment_id   BIGINT NOT NULL DEFAULT 0,
				node_id      TEXT NOT NULL DEFAULT '',
				count        BIGINT NOT NULL DEFAULT 0,
				body         TEXT NOT NULL DEFAULT '',
				updated_at   {{ts}} NOT NULL,
				PRIMARY KEY (repo, issue_number, actor)
			)`,
			`INSERT INTO violation_comments_by_actor (repo, issue_number, actor, comment_id, node_id, count, body, updated_at)
				SELECT repo, issue_number, '', comment_id, node_id, count, body, updated_at FROM violation_comments`,
		},
	},
	{
		version: 5,
		name:    "integration slots",
		stmts: []string{
			// One item per repository being integrated by a serializing worker role.
			`CREATE TABLE integration_slots (
				slot_key     TEXT PRIMARY KEY,
				item_id      TEXT NOT NULL,
				holder       TEXT NOT NULL,
				role         TEXT NOT NULL DEFAULT '',
				repo         TEXT NOT NULL DEFAULT '',
				issue_number BIGINT NOT NULL DEFAULT 0,
				since        {{ts}}
			)`,
		},
	},
	{
		version: 6,
		name:    "item snapshots",
		stmts: []string{
			// What the newest reconciler pass read of every item (titles, open, blockers): the
			// health report reads it instead of GitHub.
			`CREATE TABLE item_snapshots (
				item_id        TEXT PRIMARY KEY,
				project_id     TEXT NOT NULL,
				repo           TEXT NOT NULL DEFAULT '',
				issue_number   BIGINT NOT NULL DEFAULT 0,
				title          TEXT NOT NULL DEFAULT '',
				url            TEXT NOT NULL DEFAULT '',
				open           BOOLEAN NOT NULL DEFAULT FALSE,
				archived       BOOLEAN NOT NULL DEFAULT FALSE,
				state          TEXT NOT NULL DEFAULT '',
				open_blockers  BIGINT NOT NULL DEFAULT 0,
				total_blockers BIGINT NOT NULL DEFAULT 0,
				read_at        {{ts}} NOT NULL
			)`,
			`CREATE INDEX item_snapshots_project ON item_snapshots (project_id, read_at)`,
		},
	},
	{
		version: 7,
		name:    "unexplained refused steps by actor",
		stmts: []string{
			// A storm of one actor's refused moves is explained in one summary: an actor's
			// recent refused steps are counted, and those waiting for an explanation listed.
			`CREATE INDEX observations_actor ON observations (actor, judged_at)`,
		},
	},
	{
		version: 8,
		name:    "pending reports by time",
		stmts: []string{
			// A step of an item waits for its relatives' reports from before it: which items
			// have reports waiting from before a time is asked before every judged step.
			`CREATE INDEX observations_pending ON observations (status, at)`,
		},
	},
	{
		version: 9,
		name:    "lifecycle events in an item's history",
		stmts: []string{
			// A close, a reopen or a merge is a report of its item's history too: its kind,
			// empty for a card's change.
			`ALTER TABLE observations ADD COLUMN lifecycle TEXT NOT NULL DEFAULT ''`,
		},
	},
	{
		version: 10,
		name:    "provisional reverts",
		stmts: []string{
			// A refused move reverted at once, before a proof covered its report: the value
			// written, the refused value it was written over, the report and its time
			// (enforce.Record).
			`ALTER TABLE items ADD COLUMN provisional TEXT NOT NULL DEFAULT ''`,
			`ALTER TABLE items ADD COLUMN provisional_over TEXT NOT NULL DEFAULT ''`,
			`ALTER TABLE items ADD COLUMN provisional_for TEXT NOT NULL DEFAULT ''`,
			`ALTER TABLE items ADD COLUMN provisional_at {{ts}}`,
		},
	},
	{
		version: 11,
		name:    "revoked sessions",
		stmts: []string{
			// A page session signed out is refused by every replica until it would have
			// expired, even if its cookie was copied before (webauth).
			`CREATE TABLE revoked_sessions (
				id    TEXT PRIMARY KEY,
				until {{ts}} NOT NULL
			)`,
			`CREATE INDEX revoked_sessions_until ON revoked_sessions (until)`,
		},
	},
	{
		version: 12,
		name:    "delivery bodies",
		stmts: []string{
			// The digest of each delivery's signed body and the delivery that first brought it:
			// the delivery id is outside the signature, so a body seen again under another id
			// is held (suspect_deliveries) until GitHub's delivery log shows that id.
			`CREATE TABLE delivery_bodies (
				digest      TEXT PRIMARY KEY,
				delivery_id TEXT NOT NULL,
				received_at {{ts}} NOT NULL
			)`,
			`CREATE INDEX delivery_bodies_received ON delivery_bodies (received_at)`,
			`CREATE TABLE suspect_deliveries (
				delivery_id TEXT PRIMARY KEY,
				event       TEXT NOT NULL,
				body        TEXT NOT NULL,
				received_at {{ts}} NOT NULL
			)`,
		},
	},
	{
		version: 13,
		name:    "tool calls",
		stmts: []string{
			// The MCP façade's tool calls, counted per minute, tool, agent, outcome, refusal
			// rule and duration bucket (enforce.ToolCall): a bounded number of rows however
			// many calls are made, to which every replica adds its own (Store.RecordToolCall).
			`CREATE TABLE tool_calls (
				minute   {{ts}} NOT NULL,
				tool     TEXT NOT NULL,
				agent    TEXT NOT NULL,
				outcome  TEXT NOT NULL,
				rule     TEXT NOT NULL,
				bucket   INTEGER NOT NULL,
				calls    BIGINT NOT NULL,
				requests BIGINT NOT NULL,
				PRIMARY KEY (minute, tool, agent, outcome, rule, bucket)
			)`,
		},
	},
	{
		version: 14,
		name:    "decisions by project and verdict",
		stmts: []string{
			// The board health report lists a project's moves that stood under warn or
			// evaluate (verdict would_revert) without reading the whole audit log.
			`CREATE INDEX audit_log_project_verdict ON audit_log (project_id, verdict, at)`,
		},
	},
	{
		version: 15,
		name:    "lock taken over",
		stmts: []string{
			// Whom the lock holder took an expired lock over from (workflow.locks.ttl): that
			// agent's later moves are refused saying so.
			`ALTER TABLE items ADD COLUMN lock_taken_from TEXT NOT NULL DEFAULT ''`,
		},
	},
	{
		version: 16,
		name:    "required fields and raced writes in an item's history",
		stmts: []string{
			// A required field's edit (workflow.requirements) is a report of the item's history,
			// and the item's record keeps the values its judged history leaves (JSON by field
			// name; '' when none is known).
			`ALTER TABLE observations ADD COLUMN field TEXT NOT NULL DEFAULT ''`,
			`ALTER TABLE items ADD COLUMN fields TEXT NOT NULL DEFAULT ''`,
			// The app's guarded writes the history ends in (what each wrote over, JSON; '' when
			// none), and those a change landed before, whose reports wait for their place.
			`ALTER TABLE items ADD COLUMN wrote_over TEXT NOT NULL DEFAULT ''`,
			`ALTER TABLE items ADD COLUMN raced_write TEXT NOT NULL DEFAULT ''`,
		},
	},
	{
		version: 17,
		name:    "each organization's policy, read from its repository",
		stmts: []string{
			// The last valid policy file of each organization (its text and the commit it came
			// from), and the newest push whose file was refused (kept so that doctor and the
			// board page say the policy in force is older than the file).
			`CREATE TABLE org_policies (
				owner           TEXT PRIMARY KEY,
				installation_id BIGINT NOT NULL DEFAULT 0,
				sha             TEXT NOT NULL DEFAULT '',
				text            TEXT NOT NULL DEFAULT '',
				loaded_at       {{ts}},
				refused_sha     TEXT NOT NULL DEFAULT '',
				refused_at      {{ts}},
				refused_why     TEXT NOT NULL DEFAULT ''
			)`,
		},
	},
	{
		version: 18,
		name:    "who changed each organization's policy",
		stmts: []string{
			// Who pushed the policy in force.
			`ALTER TABLE org_policies ADD COLUMN pusher TEXT NOT NULL DEFAULT ''`,
			// Every policy change taken in or refused: its commit, who pushed it, the outcome
			// (in_force, refused, not_newer, unchanged), why, and what it changed or would
			// have changed (ralph-gate audit --policy).
			`CREATE TABLE policy_changes (
				id      {{pk}},
				owner   TEXT NOT NULL,
				sha     TEXT NOT NULL DEFAULT '',
				pusher  TEXT NOT NULL DEFAULT '',
				at      {{ts}} NOT NULL,
				outcome TEXT NOT NULL,
				reason  TEXT NOT NULL DEFAULT '',
				summary TEXT NOT NULL DEFAULT ''
			)`,
			`CREATE INDEX policy_changes_owner_at ON policy_changes (owner, at)`,
		},
	},
}

func (s *Store) ddl(stmt string) string {
	ts, pk := "TIMESTAMPTZ", "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY"
	if s.driver == DriverSQLite {
		// Fixed-width RFC 3339 text (see sqliteTimeLayout); AUTOINCREMENT so
		// audit ids are never reused.
		ts, pk = "TEXT", "INTEGER PRIMARY KEY AUTOINCREMENT"
	}
	return strings.NewReplacer("{{ts}}", ts, "{{pk}}", pk).Replace(stmt)
}

// SchemaVersion is the newest migration this build knows.
func SchemaVersion() int { return migrations[len(migrations)-1].version }

// migrate applies the missing migrations in one transaction. Open runs it under
// the migration lock (WithMigrationLock), which replicas that start together on
// Postgres take in turn; inside, a transaction-scoped advisory lock (per schema)
// still makes it wait for a replica of an older build, which takes only that
// one. On SQLite the transaction begins IMMEDIATE, which takes the database's
// write lock up front. Versions newer
// than this build are left alone, so an older replica can keep running
// during a rolling upgrade (migrations only ever add).
func (s *Store) migrate(ctx context.Context) (err error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: migrate: begin: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	if s.driver == DriverPostgres {
		if _, err = tx.ExecContext(ctx,
			`SELECT pg_advisory_xact_lock(hashtextextended('ralph-gate/store/migrate/' || coalesce(current_schema(), ''), 0))`); err != nil {
			return fmt.Errorf("store: migrate: advisory lock: %w", err)
		}
	}
	if _, err = tx.ExecContext(ctx, s.ddl(`CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		name       TEXT NOT NULL,
		applied_at {{ts}} NOT NULL
	)`)); err != nil {
		return fmt.Errorf("store: migrate: create schema_migrations: %w", err)
	}
	applied, err := appliedVersions(ctx, tx)
	if err != nil {
		return err
	}
	for _, m := range migrations {
		if applied[m.version] {
			continue
		}
		for i, stmt := range m.stmts {
			if _, err = tx.ExecContext(ctx, s.ddl(stmt)); err != nil {
				return fmt.Errorf("store: migration %d (%s) statement %d: %w", m.version, m.name, i+1, err)
			}
		}
		if _, err = tx.ExecContext(ctx, s.q(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`),
			m.version, m.name, s.t(time.Now())); err != nil {
			return fmt.Errorf("store: record migration %d: %w", m.version, err)
		}
	}
	if err = tx.Commit(); err != nil {
		return fmt.Errorf("store: migrate: commit: %w", err)
	}
	return nil
}

func appliedVersions(ctx context.Context, tx *sql.Tx) (map[int]bool, error) {
	rows, err := tx.QueryContext(ctx, `SELECT version FROM schema_migrations`)
	if err != nil {
		return nil, fmt.Errorf("store: migrate: read schema_migrations: %w", err)
	}
	defer rows.Close()
	applied := map[int]bool{}
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			return nil, fmt.Errorf("store: migrate: scan version: %w", err)
		}
		applied[v] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: migrate: read schema_migrations: %w", err)
	}
	return applied, nil
}

// AppliedMigrations lists the schema versions recorded in the database, in
// ascending order.
func (s *Store) AppliedMigrations(ctx context.Context) ([]int, error) {
	rows, err := s.query(ctx, `SELECT version FROM schema_migrations ORDER BY version`)
	if err != nil {
		return nil, fmt.Errorf("store: applied migrations: %w", err)
	}
	defer rows.Close()
	var out []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			return nil, fmt.Errorf("store: applied migrations: %w", err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: applied migrations: %w", err)
	}
	return out, nil
}
