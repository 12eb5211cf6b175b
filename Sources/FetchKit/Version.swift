public enum FetchKitVersion { public static let current = "0.1.0" }
