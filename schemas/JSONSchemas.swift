/// The JSON Schemas (draft 2020-12) of route files and jobs files, as `fetchctl schema` prints them.
///
/// The files beside this one (`routes.schema.json`, `jobs.schema.json`, written by `generate.py`)
/// are embedded byte for byte as SwiftPM resources (`.embedInCode`), so the binary needs no
/// resource bundle at run time and the schemas stay data, not Swift.
public enum JSONSchemas {
    public static var routes: String { String(decoding: PackageResources.routes_schema_json, as: UTF8.self) }
    public static var jobs: String { String(decoding: PackageResources.jobs_schema_json, as: UTF8.self) }
}
