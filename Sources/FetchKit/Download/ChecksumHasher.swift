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
        let bytes: [UInt8]
        switch engine {
        case .sha256(let h): bytes = Array(h.finalize())
        case .sha512(let h): bytes = Array(h.finalize())
        }
        let digits: [Character] = Array("0123456789abcdef")
        var out = ""
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0f)])
        }
        return out
    }
}
