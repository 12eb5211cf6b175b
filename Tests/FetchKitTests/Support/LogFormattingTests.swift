import Testing
@testable import FetchKit

/// The sizes and durations of log lines and run summaries, formatted without Foundation's
/// `String(format:)`, as they were with it.
@Suite struct LogFormattingTests {
    @Test func sizes() {
        #expect(LogFormatting.bytes(0) == "0 B")
        #expect(LogFormatting.bytes(1023) == "1023 B")
        #expect(LogFormatting.bytes(1024) == "1.0 KiB")
        #expect(LogFormatting.bytes(1536) == "1.5 KiB")
        #expect(LogFormatting.bytes(25_165_824) == "24.0 MiB")
        #expect(LogFormatting.bytes(1_073_741_823) == "1024.0 MiB")
        #expect(LogFormatting.bytes(5 << 40) == "5.0 TiB")
    }

    @Test func durations() {
        #expect(LogFormatting.duration(.milliseconds(850)) == "850 ms")
        #expect(LogFormatting.duration(.milliseconds(1240)) == "1.24 s")
        #expect(LogFormatting.duration(.milliseconds(1020)) == "1.02 s")
        #expect(LogFormatting.duration(.milliseconds(59_990)) == "59.99 s")
        #expect(LogFormatting.duration(.seconds(125)) == "2m 05s")
        #expect(LogFormatting.duration(.seconds(3725)) == "62m 05s")
    }
}
