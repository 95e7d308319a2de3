import Foundation
import PostgresNIO
import SwoopKit

/// The catalogue's tables, as versioned steps. A step is never edited once shipped: a change is a
/// new step. `prepare()` runs the steps a database lacks, one daemon at a time (an advisory lock),
/// each with its version recorded in the same transaction.
enum PostgresSchema {
    /// The advisory lock that serializes migrations ("swoop-mg").
    static let migrationLock: Int64 = 0x7377_6F6F_702D_6D67
    /// The advisory lock that serializes claims ("swoop-cl"), so that the fleet's limits hold.
    static let claimLock: Int64 = 0x7377_6F6F_702D_636C
    /// The advisory lock that serializes moves in the queue ("swoop-mv"): two would pick one place.
    static let moveLock: Int64 = 0x7377_6F6F_702D_6D76
    /// The channel idle daemons listen on.
    static let channel = "swoop_changes"

    /// Each step's statements, oldest first; the index + 1 is the version.
    static let steps: [[PostgresQuery]] = [
        [
            """
            CREATE TABLE swoop_downloads (
                id text PRIMARY KEY,
                position bigserial NOT NULL,
                priority integer NOT NULL DEFAULT 0,
                urls text[] NOT NULL,
                host text NOT NULL,
                options text NOT NULL DEFAULT '{}',
                state text NOT NULL,
                node text,
                epoch bigint NOT NULL DEFAULT 0,
                lease_until timestamptz,
                requested text,
                total_bytes bigint,
                completed_bytes bigint NOT NULL DEFAULT 0,
                speed double precision NOT NULL DEFAULT 0,
                file_name text,
                error text,
                created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
                updated_at timestamptz NOT NULL DEFAULT clock_timestamp()
            )
            """,
            "CREATE INDEX swoop_downloads_queue ON swoop_downloads (priority DESC, position) WHERE state = 'waiting'",
            "CREATE INDEX swoop_downloads_leases ON swoop_downloads (lease_until) WHERE state = 'active'",
            "CREATE INDEX swoop_downloads_order ON swoop_downloads (priority DESC, position)",
            """
            CREATE TABLE swoop_nodes (
                name text PRIMARY KEY,
                address text NOT NULL DEFAULT '',
                started_at timestamptz NOT NULL,
                beat_at timestamptz NOT NULL,
                active integer NOT NULL DEFAULT 0,
                speed double precision NOT NULL DEFAULT 0
            )
            """,
        ],
        // Parts of downloads split across nodes (a shared download directory).
        [
            "ALTER TABLE swoop_downloads ADD COLUMN parent text, ADD COLUMN part text",
            "CREATE INDEX swoop_downloads_parts ON swoop_downloads (parent, position) WHERE parent IS NOT NULL",
            // A node that takes no parts claims through an index whose predicate is exactly its
            // query's: before the table's first ANALYZE, `parent IS NULL` on the older one was
            // estimated rare, and claims sorted every waiting row (100,000 files: 70 s of CPU, not 13).
            "CREATE INDEX swoop_downloads_queue_whole ON swoop_downloads (priority DESC, position) WHERE state = 'waiting' AND parent IS NULL",
            "ALTER TABLE swoop_nodes ADD COLUMN shared_dir text NOT NULL DEFAULT ''",
        ],
        // Where each download was written, on its node; which run of a daemon holds a node's name; stop order.
        [
            "ALTER TABLE swoop_downloads ADD COLUMN directory text",
            "ALTER TABLE swoop_nodes ADD COLUMN instance text NOT NULL DEFAULT ''",
            // Room between new downloads' positions, for moves (CatalogueRules.positionStep).
            "ALTER TABLE swoop_downloads ALTER COLUMN position SET DEFAULT nextval('swoop_downloads_position_seq'::regclass) * \(unescaped: String(CatalogueRules.positionStep))",
            // tellStopped's order: the first to stop first.
            """
            CREATE INDEX swoop_downloads_stopped ON swoop_downloads (updated_at, id)
            WHERE state IN ('completed', 'failed', 'removed') AND parent IS NULL
            """,
        ],
    ]

    /// The latest version.
    static var version: Int { steps.count }

    /// The columns an entry is read from, in ``entry(_:)``'s order.
    static let columns = """
        id, urls, options, priority, state, node, epoch, requested, total_bytes, completed_bytes, speed, file_name, error, created_at, updated_at,
        parent, part, directory
        """

    /// An entry from a row of ``columns``.
    static func entry(_ row: PostgresRow) throws -> CatalogueEntry {
        let (id, urls, options, priority, state, node, epoch, requested, total, completed, speed, fileName, error, created, updated, parent, part, directory) =
            try row.decode(
                (String, [String], String, Int, String, String?, Int, String?, Int?, Int, Double, String?, String?, Date, Date, String?, String?, String?).self
            )
        return CatalogueEntry(
            id: Download.ID(id), urls: urls, options: options, priority: priority, state: Download.State(rawValue: state) ?? .failed,
            node: node, epoch: epoch, requested: requested.flatMap(CatalogueControl.init(rawValue:)), totalBytes: total,
            completedBytes: completed, bytesPerSecond: speed, fileName: fileName, error: error, createdAt: created, updatedAt: updated,
            parent: parent.map(Download.ID.init), part: CataloguePart(json: part), directory: directory
        )
    }
}
