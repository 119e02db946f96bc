import Testing
import TipsSync

@Suite struct HybridClockTests {
  @Test func followsPhysicalTimeAndNeverGoesBack() {
    var clock = HybridClock()
    let a = clock.next(physicalSeconds: 1_700_000_000)
    let b = clock.next(physicalSeconds: 1_700_000_000)
    #expect(b > a)
    #expect(a.seconds == 1_700_000_000)
    let c = clock.next(physicalSeconds: 1_699_999_000)  // the physical clock went back
    #expect(c > b)
    clock.observe(HLC(rawValue: a.rawValue + (3_600_000 << 16)))  // a device an hour ahead
    let d = clock.next(physicalSeconds: 1_700_000_001)
    #expect(d.rawValue > a.rawValue + (3_600_000 << 16))
  }
}
