// Sourcetables as casters send them (junk lines included), and the nearest mountpoint.
import GNSSProtocol
import Testing

@testable import NTRIP

@Suite("NTRIP sourcetable")
struct SourcetableTests {
    static let table = """
        CAS;rtk2go.com;2101;RTK2go;SNIP;0;USA;37.00;-122.00;0.0.0.0;0;http://rtk2go.com\r
        NET;SNIP;SNIP;B;N;none;none;none;none\r
        STR;BERLIN;Berlin;RTCM 3.3;1005(10),1077(1),1087(1);2;GPS+GLO;SNIP;DEU;52.52;13.40;0;0;sNTRIP;none;B;N;4800;extra;fields\r
        STR;POTSDAM;Potsdam;RTCM 3.2;1005(10),1074(1);2;GPS;SNIP;DEU;52.39;13.06;1;0;sNTRIP;none;B;N;2400;\r
        STR;MUNICH;Muenchen;RTCM3;1005(10);2;GPS;SNIP;DEU;48.14;11.58;0;0;sNTRIP;none;N;N;2400;\r
        STR;CMRFEED;Berlin CMR;CMRx;;2;GPS;SNIP;DEU;52.52;13.41;0;0;x;none;B;N;2400;\r
        STR;NOWHERE;Unknown;RTCM 3.3;;2;GPS;SNIP;XXX;0.00;0.00;0;0;x;none;B;N;0;\r
        STR;;missing mountpoint\r
        this is junk\r
        \u{00}\u{01}binary junk\r

        ENDSOURCETABLE\r
        STR;AFTER;after the end;RTCM 3.3;;2;GPS;SNIP;DEU;1;1;0;0;x;none;B;N;0;\r

        """

    @Test("STR, CAS and NET records parsed; junk counted and skipped; nothing after ENDSOURCETABLE")
    func parse() throws {
        let table = Sourcetable(parsing: Array(Self.table.utf8))
        #expect(table.isComplete)
        #expect(table.mountpoints == ["BERLIN", "POTSDAM", "MUNICH", "CMRFEED", "NOWHERE"])
        #expect(table.casters.count == 1)
        #expect(table.casters.first?.fields.first == "rtk2go.com")
        #expect(table.networks.count == 1)
        #expect(table.skippedLines == 3)
        let berlin = try #require(table.stream(named: "BERLIN"))
        #expect(berlin.identifier == "Berlin")
        #expect(berlin.format == "RTCM 3.3")
        #expect(berlin.formatDetails == "1005(10),1077(1),1087(1)")
        #expect(berlin.carrier == 2)
        #expect(berlin.navigationSystem == "GPS+GLO")
        #expect(berlin.country == "DEU")
        #expect(berlin.latitude == 52.52 && berlin.longitude == 13.40)
        #expect(!berlin.requiresPosition)
        #expect(berlin.authentication == "B")
        #expect(berlin.bitrate == 4800)
        #expect(berlin.miscellaneous == "extra;fields")
        #expect(table.stream(named: "POTSDAM")?.requiresPosition == true)
    }

    @Test("the nearest RTCM 3 stream with a position; formats other than RTCM 3 and 0/0 positions are left out")
    func nearest() throws {
        let table = Sourcetable(parsing: Array(Self.table.utf8))
        // Near Potsdam's station.
        let nearest = try #require(table.nearest(to: 52.40, 13.07))
        #expect(nearest.stream.mountpoint == "POTSDAM")
        #expect(nearest.distance > 500 && nearest.distance < 2000)
        // In Berlin: BERLIN, not the CMR stream 700 m away.
        #expect(table.nearest(to: 52.521, 13.41)?.stream.mountpoint == "BERLIN")
        let order = table.streams(nearestTo: 48.0, 11.0).map(\.stream.mountpoint)
        #expect(order == ["MUNICH", "POTSDAM", "BERLIN"])
        // Berlin to Munich: 504 km as the crow flies.
        let munich = try #require(table.streams(nearestTo: 52.52, 13.40).last)
        #expect(abs(munich.distance - 504_000) < 3000)
        #expect(Sourcetable(parsing: Array("ENDSOURCETABLE\r\n".utf8)).nearest(to: 0, 0) == nil)
    }

    @Test("keywords in either case of their ASCII letters, fields split at the byte ';' and trimmed of spaces and tabs")
    func keywordsAndFields() throws {
        let text = " str;M;\u{301}id ; RTCM 3.3\t;;2;GPS;N;DEU;1;1;0;0;x;none;B;N;0;\r\n"
            // ſ upper-cases to S, but ſTR is no ASCII keyword: a junk line.
            + "\u{17F}TR;X;x\r\n" + "Cas;c\r\n" + "net;n\r\n" + "STR ;Y;y\r\n"
            + "  EndSourceTable \r\n" + "STR;AFTER;x\r\n"
        let table = Sourcetable(parsing: Array(text.utf8))
        #expect(table.isComplete)
        let stream = try #require(table.streams.first)
        #expect(table.mountpoints == ["M"])
        #expect(stream.identifier == "\u{301}id")
        #expect(stream.format == "RTCM 3.3")
        #expect(table.casters.map(\.fields) == [["c"]])
        #expect(table.networks.map(\.fields) == [["n"]])
        #expect(table.skippedLines == 2)
    }

    @Test("a table cut short says so")
    func incomplete() {
        let table = Sourcetable(parsing: Array("STR;A;a;RTCM 3.3;;2;GPS;N;DEU;1;1;0;0;x;none;B;N;0;\n".utf8))
        #expect(!table.isComplete)
        #expect(table.mountpoints == ["A"])
    }
}
