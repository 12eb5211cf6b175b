import Crypto

/// Hashes a download while it streams, for `checksum: sha256:…` or `sha512:…`.
struct ChecksumHasher: Sendable {
    private enum Engine: Sendable {
        case sha256(SHA256)
        case sha512(SHA512)
    }

    let algorithm: Checksum.Algorithm
    private var engine: Engine

    init(_ algorithm: Checksum.Algorithm) {
        self.algorithm = algorithm
        switch algorithm {
        case .sha256: engine = .sha256(SHA256())
        case .sha512: engine = .sha512(SHA512())
        }
    }

    mutating func update(_ bytes: UnsafeRawBufferPointer) {
        switch engine {
        case .sha256(var h):
            h.update(bufferPointer: bytes)
            engine = .sha256(h)
        case .sha512(var h):
            h.update(bufferPointer: bytes)
            engine = .sha512(h)
        }
    }

    /// Lowercase hex of the digest.
    func finalize() -> String {
        switch engine {
        case .sha256(let h): return h.finalize().withUnsafeBytes { Hex.string($0) }
        case .sha512(let h): return h.finalize().withUnsafeBytes { Hex.string($0) }
        }
    }
}
