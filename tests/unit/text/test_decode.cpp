// Golden lines for hand-built frames (their bytes below, as built with
// scapy; each line checked field by field against tcpdump -n -S), cut
// short at every length, and the dump and timestamp formats.
#include <gtest/gtest.h>

#include <cstring>

#include <cstdlib>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include "decode_helpers.hpp"
#include "text/decode.hpp"
#include "text/tcp_flows.hpp"
#include "text/timestamp.hpp"

namespace {

using xdpcap::text::DecodeOptions;
using xdpcap::text::Writer;
using xdpcap::test::decode;
using xdpcap::test::from_hex;

struct Golden {
    const char* name;
    const char* hex;
    bool link;
    bool quick;
    const char* line;
};

const Golden kGoldens[] = {
    // 802.3 with LLC other than SNAP, STP and IP: the SAPs, the frame type,
    // and the data in hex where tcpdump dumps it.
    {"LlcXid", "0c000000740202000000000100060405af81010000000000000000000000000000000000000000000000000000000000000000000000000000000000",
     false, false, "02:00:00:00:00:01 > 0c:00:00:00:74:02 SNA Unnumbered, xid, Flags [Response], length 6: 01 00"},
    {"LlcXidE", "0c000000740202000000000100060405af81010000000000000000000000000000000000000000000000000000000000000000000000000000000000",
     true, false, "02:00:00:00:00:01 > 0c:00:00:00:74:02, 802.3, length 6: LLC, dsap SNA (0x04) Individual, ssap SNA (0x04) Response, ctrl 0xaf: Unnumbered, xid, Flags [Response], length 6: 01 00"},
    {"LlcSupervisory", "0c0000007402020000000001000404040910000000000000000000000000000000000000000000000000000000000000000000000000000000000000",
     false, false, "02:00:00:00:00:01 > 0c:00:00:00:74:02 SNA Supervisory, Reject, rcv seq 8, Flags [Command], length 4"},
    {"LlcInformation", "0c0000007402020000000001000b441034127061796c6f61640000000000000000000000000000000000000000000000000000000000000000000000",
     false, false, "02:00:00:00:00:01 Unknown SSAP 0x10 > 0c:00:00:00:74:02 Unknown DSAP 0x44 Information, send seq 26, rcv seq 9, Flags [Command], length 11\n\t0x0000:  4410 3412 7061 796c 6f61 64              D.4.payload"},
    // MPTCP options by subtype.
    {"MptcpCapable", "020000007102020000007101080045000034471140004006d98ac6124701c6124702a02801bb00001b58000000008002faf0000000001e0c00819c9eabd1e46a33b2",
     false, false, "IP 198.18.71.1.41000 > 198.18.71.2.443: Flags [S], seq 7000, win 64240, options [mptcp 12 capable v0 csum {0x9c9eabd1e46a33b2}], length 0"},
    {"MptcpAddAddr", "02000000710202000000710108004500003c471140004006d982c6124701c6124702a02801bb00001b5800000000a010faf0000000001e123005c612000901bb9c9eabd1e46a33b20000",
     false, false, "IP 198.18.71.1.41000 > 198.18.71.2.443: Flags [.], ack 0, win 64240, options [mptcp 18 add-addr v1 id 5 198.18.0.9:443 hmac 0x9c9eabd1e46a33b2,eol], length 0"},
    // TCP options and malformed headers: tcpdump 4.99.3 -n -S's lines of the same frames.
    {"TcpSynOptions", "02000000710202000000710108004500003c471140004006d982c6124701c6124702a410138a0000138800000000a002faf000000000020405b40402080a7422c7ce0000000001030307",
     false, false, "IP 198.18.71.1.42000 > 198.18.71.2.5002: Flags [S], seq 5000, win 64240, options [mss 1460,sackOK,TS val 1948436430 ecr 0,nop,wscale 7], length 0"},
    {"TcpSynAckOptions", "02000000710202000000710108004500003c471140004006d982c6124702c6124701138aa4100000232800001389a012faf000000000020405b40402080a7422c7ce0000000001030307",
     false, false, "IP 198.18.71.2.5002 > 198.18.71.1.42000: Flags [S.], seq 9000, ack 5001, win 64240, options [mss 1460,sackOK,TS val 1948436430 ecr 0,nop,wscale 7], length 0"},
    {"TcpMd5", "02000000710202000000710108004500003c471140004006d982c6124701c6124702a410138a0000138d00002329a01001f6000000001312000102030405060708090a0b0c0d0e0f0101",
     false, false, "IP 198.18.71.1.42000 > 198.18.71.2.5002: Flags [.], ack 9001, win 502, options [md5 shared secret not supplied with -M, can't check - 000102030405060708090a0b0c0d0e0f,nop,nop], length 0"},
    {"TcpAo", "02000000710202000000710108004500003e471140004006d980c6124701c6124702a410138a0000138f00002329a01001f6000000001d0401021d1003040a0b0c0d0e0f1011121314150000",
     false, false, "IP 198.18.71.1.42000 > 198.18.71.2.5002: Flags [.], seq 5007:5009, ack 9001, win 502, options [tcp-ao keyid 1 rnextkeyid 2,tcp-ao keyid 3 rnextkeyid 4 mac 0x0a0b0c0d0e0f101112131415], length 2"},
    {"TcpFastOpen", "020000007102020000007101080045000036471140004006d988c6124701c6124702a410138a0000139100002329801001f6000000002202220a01020304050607080000",
     false, false, "IP 198.18.71.1.42000 > 198.18.71.2.5002: Flags [.], seq 5009:5011, ack 9001, win 502, options [tfo  cookiereq,tfo  cookie 0102030405060708], length 2"},
    {"TcpExpBad", "02000000710202000000710108004500002e471140004006d990c6124701c6124702a410138a0000139400002329601001f600000000fe0612340000",
     false, false, "IP 198.18.71.1.42000 > 198.18.71.2.5002: Flags [.], seq 5012:5014, ack 9001, win 502, options [[bad opt]"},
    {"TcpUnknown", "020000007102020000007101080045000032471140004006d98cc6124701c6124702a410138a0000139600002329701001f6000000006305deadbe6402000000",
     false, false, "IP 198.18.71.1.42000 > 198.18.71.2.5002: Flags [.], seq 5014:5016, ack 9001, win 502, options [unknown-99 0xdeadbe,unknown-100,eol], length 2"},
    {"TcpLenMismatch", "020000007102020000007101080045000030471140004006d98ec6124701c6124702a410138a0000139700002329701001f600000000020505b400000000",
     false, false, "IP 198.18.71.1.42000 > 198.18.71.2.5002: Flags [.], ack 9001, win 502, options [mss 1460[len 5],eol], length 0"},
    {"TcpBadOptLength", "02000000710202000000710108004500002c471140004006d992c6124701c6124702a410138a0000139900002329601001f60000000002010000",
     false, false, "IP 198.18.71.1.42000 > 198.18.71.2.5002: Flags [.], ack 9001, win 502, options [[bad opt]"},
    {"TcpHeaderTooShort", "020000007102020000007101080045000028471140004006d996c6124701c6124702a410138a00001450000023294010faf000000000",
     false, false, "IP 198.18.71.1.42000 > 198.18.71.2.5002:  tcp 4 [bad hdr length 16 - too short, < 20]"},
    {"TcpHeaderTooLong", "020000007102020000007101080045000028471140004006d996c6124701c6124702a410138a0000145100002329f010faf000000000",
     false, false, "IP 198.18.71.1.42000 > 198.18.71.2.5002: Flags [.] [bad hdr length 60 - too long, > 20]"},
    // TCP SYN
    {"TcpSyn", "020000000002020000000001080045000028000100004006eea7c6120001c612000204d20050000003e8000000005002faf01fc00000",
     false, false, "IP 198.18.0.1.1234 > 198.18.0.2.80: Flags [S], seq 1000, win 64240, length 0"},
    // TCP SYN-ACK
    {"TcpSynAck", "020000000002020000000001080045000028000100004006eea7c6120001c612000204d20050000003e8000007d05012faf017e00000",
     false, false, "IP 198.18.0.1.1234 > 198.18.0.2.80: Flags [S.], seq 1000, ack 2000, win 64240, length 0"},
    // TCP PSH-ACK with 13 bytes
    {"TcpPushData", "020000000002020000000001080045000035000100004006ee9ac6120001c612000204d21f90000003e8000007d05018020055a2000068656c6c6f20776f726c640d0a",
     false, false, "IP 198.18.0.1.1234 > 198.18.0.2.8080: Flags [P.], seq 1000:1013, ack 2000, win 512, length 13: HTTP"},
    // TCP PSH-ACK with 13 bytes (-e)
    {"TcpPushDataLink", "020000000002020000000001080045000035000100004006ee9ac6120001c612000204d21f90000003e8000007d05018020055a2000068656c6c6f20776f726c640d0a",
     true, false, "02:00:00:00:00:01 > 02:00:00:00:00:02, ethertype IPv4 (0x0800), length 67: 198.18.0.1.1234 > 198.18.0.2.8080: Flags [P.], seq 1000:1013, ack 2000, win 512, length 13: HTTP"},
    // TCP PSH-ACK with 13 bytes (-q)
    {"TcpPushDataQuick", "020000000002020000000001080045000035000100004006ee9ac6120001c612000204d21f90000003e8000007d05018020055a2000068656c6c6f20776f726c640d0a",
     false, true, "IP 198.18.0.1.1234 > 198.18.0.2.8080: tcp 13"},
    // TCP FIN PSH ACK URG RST ECE CWR
    {"TcpAllFlags", "020000000002020000000001080045000029000100004006eea6c6120001c612000204d20050000000010000000250fd0005a591000378",
     false, false, "IP 198.18.0.1.1234 > 198.18.0.2.80: Flags [FRP.UEW], seq 1:2, ack 2, win 5, urg 3, length 1: HTTP"},
    // TCP without flags
    {"TcpNoFlags", "020000000002020000000001080045000028000100004006eea7c6120001c61200020001000200000007000000005000000923aa0000",
     false, false, "IP 198.18.0.1.1 > 198.18.0.2.2: Flags [none], win 9, length 0"},
    // TCP RST
    {"TcpRst", "020000000002020000000001080045000028000100004006eea7c6120001c612000204d200500000000500000000500400001e920000",
     false, false, "IP 198.18.0.1.1234 > 198.18.0.2.80: Flags [R], seq 5, win 0, length 0"},
    // TCP pure ACK
    {"TcpAck", "020000000002020000000001080045000028000100004006eea7c6120001c612000204d200500000000500000007501000001e7f0000",
     false, false, "IP 198.18.0.1.1234 > 198.18.0.2.80: Flags [.], ack 7, win 0, length 0"},
    // UDP with 8 bytes
    {"Udp", "020000000002020000000001080045000024000100004011eea0c6120001c612000213881b580010b3306162636465666768",
     false, false, "IP 198.18.0.1.5000 > 198.18.0.2.7000: UDP, length 8"},
    // ICMP echo request
    {"IcmpEchoRequest", "02000000000202000000000108004500003c000100004001ee98c6120001c61200020800016f0007000370696e6770696e6770696e6770696e6770696e6770696e6770696e6770696e67",
     false, false, "IP 198.18.0.1 > 198.18.0.2: ICMP echo request, id 7, seq 3, length 40"},
    // ICMP echo reply
    {"IcmpEchoReply", "02000000000202000000000108004500003c000100004001ee98c6120002c61200010000096f0007000370696e6770696e6770696e6770696e6770696e6770696e6770696e6770696e67",
     false, false, "IP 198.18.0.2 > 198.18.0.1: ICMP echo reply, id 7, seq 3, length 40"},
    // ICMP port unreachable quoting UDP
    {"IcmpPortUnreachable", "020000000002020000000001080045000038000100004001ee9cc6120002c61200010303893e000000004500001c000100004011eea8c6120001c61200021388000900086025",
     false, false, "IP 198.18.0.2 > 198.18.0.1: ICMP 198.18.0.2 udp port 9 unreachable, length 36"},
    // ICMP time exceeded
    {"IcmpTimeExceeded", "020000000002020000000001080045000038000100004001ee9cc6120002c61200010b008141000000004500001c000100004011eea8c6120001c61200021388000900086025",
     false, false, "IP 198.18.0.2 > 198.18.0.1: ICMP time exceeded in-transit, length 36"},
    // ARP request
    {"ArpRequest", "ffffffffffff02000000000108060001080006040001020000000001c6120001000000000000c6120002",
     false, false, "ARP, Request who-has 198.18.0.2 tell 198.18.0.1, length 28"},
    // ARP request (-e)
    {"ArpRequestLink", "ffffffffffff02000000000108060001080006040001020000000001c6120001000000000000c6120002",
     true, false, "02:00:00:00:00:01 > ff:ff:ff:ff:ff:ff, ethertype ARP (0x0806), length 42: Request who-has 198.18.0.2 tell 198.18.0.1, length 28"},
    // ARP request (-q)
    {"ArpRequestQuick", "ffffffffffff02000000000108060001080006040001020000000001c6120001000000000000c6120002",
     false, true, "ARP, Request who-has 198.18.0.2 tell 198.18.0.1, length 28"},
    // ARP reply
    {"ArpReply", "02000000000202000000000108060001080006040002020000000002c6120002020000000001c6120001",
     false, false, "ARP, Reply 198.18.0.2 is-at 02:00:00:00:00:02, length 28"},
    // IPv6 TCP SYN
    {"Ipv6TcpSyn", "02000000000202000000000186dd600000000014064020010db800000000000000000000000120010db800000000000000000000000204d201bb0000000900000000500220002dd80000",
     false, false, "IP6 2001:db8::1.1234 > 2001:db8::2.443: Flags [S], seq 9, win 8192, length 0"},
    // IPv6 UDP
    {"Ipv6Udp", "02000000000202000000000186dd60000000000a114020010db800000000000000000000000120010db800000000000000000000000200010002000a29e87a7a",
     false, false, "IP6 2001:db8::1.1 > 2001:db8::2.2: UDP, length 2"},
    // ICMPv6 echo request
    {"Icmp6EchoRequest", "02000000000202000000000186dd60000000000c3a4020010db800000000000000000000000120010db800000000000000000000000280005f7a0001000261626364",
     false, false, "IP6 2001:db8::1 > 2001:db8::2: ICMP6, echo request, id 1, seq 2, length 12"},
    // ICMPv6 echo reply
    {"Icmp6EchoReply", "02000000000202000000000186dd60000000000c3a4020010db800000000000000000000000120010db800000000000000000000000281005e7a0001000261626364",
     false, false, "IP6 2001:db8::1 > 2001:db8::2: ICMP6, echo reply, id 1, seq 2, length 12"},
    // ICMPv6 neighbor solicitation
    {"Icmp6NeighborSolicitation", "02000000000202000000000186dd6000000000203aff20010db8000000000000000000000001ff0200000000000000000001ff00000287001c270000000020010db80000000000000000000000020101020000000001",
     false, false, "IP6 2001:db8::1 > ff02::1:ff00:2: ICMP6, neighbor solicitation, who has 2001:db8::2, length 32"},
    // ICMPv6 neighbor advertisement
    {"Icmp6NeighborAdvertisement", "02000000000202000000000186dd6000000000203aff20010db800000000000000000000000220010db800000000000000000000000188008a716000000020010db80000000000000000000000020201020000000002",
     false, false, "IP6 2001:db8::2 > 2001:db8::1: ICMP6, neighbor advertisement, tgt is 2001:db8::2, length 32"},
    // ICMPv6 port unreachable
    {"Icmp6PortUnreachable", "02000000000202000000000186dd6000000000383a4020010db800000000000000000000000120010db8000000000000000000000002010431e500000000600000000008114020010db800000000000000000000000220010db8000000000000000000000001000100020008a466",
     false, false, "IP6 2001:db8::1 > 2001:db8::2: ICMP6, destination unreachable, unreachable port, 2001:db8::1 udp port 2, length 56"},
    // ICMPv6 packet too big
    {"Icmp6PacketTooBig", "02000000000202000000000186dd6000000000383a4020010db800000000000000000000000120010db800000000000000000000000202002be900000500600000000008114020010db800000000000000000000000220010db8000000000000000000000001000100020008a466",
     false, false, "IP6 2001:db8::1 > 2001:db8::2: ICMP6, packet too big, mtu 1280, length 56"},
    // IPv6 hop-by-hop and destination options, then UDP
    {"Ipv6HopByHopDestOpts", "02000000000202000000000186dd60000000001a004020010db800000000000000000000000120010db80000000000000000000000023c00010400000000110001040000000000010002000a29e87a7a",
     false, false, "IP6 2001:db8::1 > 2001:db8::2: HBH DSTOPT 1 > 2: UDP, length 2"},
    // IPv6 routing header, then TCP
    {"Ipv6Routing", "02000000000202000000000186dd60000000002c2b4020010db800000000000000000000000120010db8000000000000000000000002060200010000000020010db800000000000000000000000300010002000000000000000150102000345b0000",
     false, false, "IP6 2001:db8::1 > 2001:db8::2: RT6 (len=2, type=0 [Deprecated], segleft=1, [0]2001:db8::3) 1 > 2: Flags [.], ack 1, win 8192, length 0"},
    // IPv6 first fragment
    {"Ipv6FirstFragment", "02000000000202000000000186dd6000000000182c4020010db800000000000000000000000120010db80000000000000000000000021100000100000005000100020010ba6c7a7a7a7a7a7a7a7a",
     false, false, "IP6 2001:db8::1 > 2001:db8::2: frag (0|16) 1 > 2: UDP, length 8"},
    // IPv6 later fragment
    {"Ipv6LaterFragment", "02000000000202000000000186dd6000000000102c4020010db800000000000000000000000120010db80000000000000000000000023b000010000000057a7a7a7a7a7a7a7a",
     false, false, "IP6 2001:db8::1 > 2001:db8::2: frag (16|8)"},
    // IPv6 no next header
    {"Ipv6NoNextHeader", "02000000000202000000000186dd6000000000003b4020010db800000000000000000000000120010db8000000000000000000000002",
     false, false, "IP6 2001:db8::1 > 2001:db8::2: no next header"},
    // IPv6 addresses with zero runs
    {"Ipv6Compression", "02000000000202000000000186dd600000000008114020010db800000001000000000000000120010000000000010000000000000002000100020008b21c",
     false, false, "IP6 2001:db8:0:1::1.1 > 2001:0:0:1::2.2: UDP, length 0"},
    // 802.1Q tag 100
    {"Vlan", "02000000000202000000000181000064080045000024000100004011eea0c6120001c612000213881b580010b3306162636465666768",
     false, false, "vlan 100, p 0, ethertype IPv4, IP 198.18.0.1.5000 > 198.18.0.2.7000: UDP, length 8"},
    // 802.1Q tag 100 (-e)
    {"VlanLink", "02000000000202000000000181000064080045000024000100004011eea0c6120001c612000213881b580010b3306162636465666768",
     true, false, "02:00:00:00:00:01 > 02:00:00:00:00:02, ethertype 802.1Q (0x8100), length 54: vlan 100, p 0, ethertype IPv4 (0x0800), 198.18.0.1.5000 > 198.18.0.2.7000: UDP, length 8"},
    // 802.1Q tag 100 (-q)
    {"VlanQuick", "02000000000202000000000181000064080045000024000100004011eea0c6120001c612000213881b580010b3306162636465666768",
     false, true, "vlan 100, p 0, ethertype IPv4, IP 198.18.0.1.5000 > 198.18.0.2.7000: UDP, length 8"},
    // 802.1ad tag 200 priority 3 over 802.1Q tag 100
    {"QinQ", "02000000000202000000000188a860c881000064080045000024000100004011eea0c6120001c612000213881b580010b3306162636465666768",
     false, false, "vlan 200, p 3, ethertype 802.1Q, vlan 100, p 0, ethertype IPv4, IP 198.18.0.1.5000 > 198.18.0.2.7000: UDP, length 8"},
    // 802.1ad tag 200 priority 3 over 802.1Q tag 100 (-e)
    {"QinQLink", "02000000000202000000000188a860c881000064080045000024000100004011eea0c6120001c612000213881b580010b3306162636465666768",
     true, false, "02:00:00:00:00:01 > 02:00:00:00:00:02, ethertype 802.1Q-QinQ (0x88a8), length 58: vlan 200, p 3, ethertype 802.1Q (0x8100), vlan 100, p 0, ethertype IPv4 (0x0800), 198.18.0.1.5000 > 198.18.0.2.7000: UDP, length 8"},
    // 802.1ad tag 200 priority 3 over 802.1Q tag 100 (-q)
    {"QinQQuick", "02000000000202000000000188a860c881000064080045000024000100004011eea0c6120001c612000213881b580010b3306162636465666768",
     false, true, "vlan 200, p 3, ethertype 802.1Q, vlan 100, p 0, ethertype IPv4, IP 198.18.0.1.5000 > 198.18.0.2.7000: UDP, length 8"},
    // ethertype 0x88b5
    {"UnknownEthertype", "02000000000202000000000188b500000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000",
     false, false, "02:00:00:00:00:01 > 02:00:00:00:00:02, ethertype Unknown (0x88b5), length 60: "
     "\n\t0x0000:  0000 0000 0000 0000 0000 0000 0000 0000  ................"
     "\n\t0x0010:  0000 0000 0000 0000 0000 0000 0000 0000  ................"
     "\n\t0x0020:  0000 0000 0000 0000 0000 0000 0000       .............."},
    // ethertype 0x88b5 (-e)
    {"UnknownEthertypeLink", "02000000000202000000000188b500000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000",
     true, false, "02:00:00:00:00:01 > 02:00:00:00:00:02, ethertype Unknown (0x88b5), length 60: "
     "\n\t0x0000:  0000 0000 0000 0000 0000 0000 0000 0000  ................"
     "\n\t0x0010:  0000 0000 0000 0000 0000 0000 0000 0000  ................"
     "\n\t0x0020:  0000 0000 0000 0000 0000 0000 0000       .............."},
    // ethertype 0x88b5 (-q)
    {"UnknownEthertypeQuick", "02000000000202000000000188b500000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000",
     false, true, "02:00:00:00:00:01 > 02:00:00:00:00:02, Unknown Ethertype (0x88b5), length 60: "},
    // IP protocol 200
    {"UnknownIpProtocol", "0200000000020200000000010800450000280001000040c8ede5c6120001c61200020000000000000000000000000000000000000000",
     false, false, "IP 198.18.0.1 > 198.18.0.2:  ip-proto-200 20"},
    // IPv4 first fragment (more follow)
    {"Ipv4FirstFragment", "020000000002020000000001080045000024004d20004011ce54c6120001c612000213881bbc0010b3306162636465666768",
     false, false, "IP 198.18.0.1.5000 > 198.18.0.2.7100: UDP, length 8"},
    // IPv4 later fragment
    {"Ipv4LaterFragment", "02000000000202000000000108004500001c004d00644011edf8c6120001c61200026162636465666768",
     false, false, "IP 198.18.0.1 > 198.18.0.2: ip-proto-17"},
};

const char* frame_hex(const char* name)
{
    for (const Golden& g : kGoldens) {
        if (std::string(g.name) == name)
            return g.hex;
    }
    return "";
}

std::vector<uint8_t> frame(const char* name)
{
    return from_hex(frame_hex(name));
}

TEST(TextDecode, GoldenLines)
{
    for (const Golden& g : kGoldens) {
        const auto bytes = from_hex(g.hex);
        DecodeOptions options;
        options.link_header = g.link;
        options.quick = g.quick;
        EXPECT_EQ(decode(bytes, bytes.size(), options), g.line) << g.name;
    }
}

// Every frame at every capture length: no read past the captured bytes
// (the sanitizers watch), and a decode that never claims more than it saw.
TEST(TextDecode, EveryTruncationIsSafe)
{
    for (const Golden& g : kGoldens) {
        const auto bytes = from_hex(g.hex);
        for (size_t caplen = 0; caplen <= bytes.size(); ++caplen) {
            for (int variant = 0; variant < 4; ++variant) {
                DecodeOptions options;
                options.link_header = variant & 1;
                options.quick = variant & 2;
                options.hex_ascii = variant == 3 ? 2 : 0;
                const std::string line = decode(bytes, caplen, options);
                EXPECT_FALSE(line.empty()) << g.name << " at " << caplen;
                if (caplen < 14) {
                    EXPECT_EQ(line.substr(0, 9), " [|ether]") << g.name; // as tcpdump: "TIME  [|ether]"
                }
            }
        }
    }
}

// The marks and their spacing as tcpdump 4.99.3 prints them (checked with
// it), except where the text view shows VLAN tags without -e, and the IPv6
// extension headers, whose cuts tcpdump words otherwise.
TEST(TextDecode, TruncationIsMarked)
{
    const struct {
        const char* frame;
        size_t caplen;
        const char* line;
    } cases[] = {
        {"TcpSyn", 10, " [|ether]"},
        {"TcpSyn", 20, "IP  [|ip]"},
        {"TcpSyn", 36, "IP 198.18.0.1 > 198.18.0.2: [|tcp]"},
        {"TcpSyn", 40, "IP 198.18.0.1.1234 > 198.18.0.2.80:  [|tcp]"},
        {"TcpSyn", 53, "IP 198.18.0.1.1234 > 198.18.0.2.80:  [|tcp]"},
        {"TcpSyn", 54, "IP 198.18.0.1.1234 > 198.18.0.2.80: Flags [S], seq 1000, win 64240, length 0"},
        {"Udp", 40, "IP 198.18.0.1.5000 > 198.18.0.2.7000:  [|udp]"},
        {"IcmpEchoRequest", 40, "IP 198.18.0.1 > 198.18.0.2:  [|icmp]"},
        {"ArpRequest", 30, " [|arp]"},
        {"ArpRequest", 20, " [|arp]"},
        {"Ipv6Udp", 50, " [|ip6]"},
        {"Ipv6Udp", 56, "IP6 2001:db8::1 > 2001:db8::2:  [|udp]"},
        {"Icmp6EchoRequest", 58, "IP6 2001:db8::1 > 2001:db8::2: ICMP6, echo request [|icmp6]"},
        {"Icmp6NeighborSolicitation", 70, "IP6 2001:db8::1 > ff02::1:ff00:2: ICMP6, neighbor solicitation [|icmp6]"},
        {"Ipv6HopByHopDestOpts", 60, "IP6 2001:db8::1 > 2001:db8::2:  [|hbhopt]"},
        {"Ipv6FirstFragment", 60, "IP6 2001:db8::1 > 2001:db8::2: frag (0|16) "},
        {"Vlan", 16, " [|vlan]"},
        {"QinQ", 20, "vlan 200, p 3, ethertype 802.1Q,  [|vlan]"},
        {"QinQ", 30, "vlan 200, p 3, ethertype 802.1Q, vlan 100, p 0, ethertype IPv4, IP  [|ip]"},
    };
    for (const auto& c : cases) {
        const auto bytes = frame(c.frame);
        ASSERT_FALSE(bytes.empty()) << c.frame;
        EXPECT_EQ(decode(bytes, c.caplen), c.line) << c.frame << " at " << c.caplen;
    }
}

// IPv6 addresses as inet_ntop writes them (RFC 5952).
TEST(TextDecode, Ipv6AddressText)
{
    const struct {
        uint8_t last[16];
        const char* text;
    } cases[] = {
        {{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, "2001:db8::1"},
        {{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, "::"},
        {{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, "::1"},
        {{0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, "fe80::"},
        {{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 198, 18, 0, 1}, "::ffff:198.18.0.1"},
        {{0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1}, "2001:db8:1:0:1::1"},
        {{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1}, "2001:db8::1:0:0:1"},
        {{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1}, "2001:db8:0:1:1:1:1:1"},
    };
    auto f = frame("Ipv6Udp");
    for (const auto& c : cases) {
        std::copy(std::begin(c.last), std::end(c.last), f.begin() + 14 + 8);
        const std::string line = decode(f, f.size());
        EXPECT_EQ(line.substr(0, line.find(".1 > ")), std::string("IP6 ") + c.text) << c.text;
    }
}

// A zero IPv4 total length is tcpdump's "bad-len 0" (a BIG TCP super-frame
// too, as tcpdump shows it); a zero IPv6 payload length without a jumbo
// payload option leaves the payload empty, as tcpdump 4.99.3 takes it.
TEST(TextDecode, ZeroIpLength)
{
    auto v4 = frame("TcpPushData");
    v4[16] = v4[17] = 0;
    EXPECT_EQ(decode(v4, v4.size()), "IP bad-len 0");
    auto v6 = frame("Ipv6Udp");
    v6[18] = v6[19] = 0;
    EXPECT_EQ(decode(v6, v6.size()), "IP6 2001:db8::1 > 2001:db8::2:  [|udp]");
}

// The longest decode there is (eight VLAN tags, sixteen IPv6 extension
// headers, an ICMPv6 error, -e) fits kMaxDecodeLength.
TEST(TextDecode, LongestDecodeFits)
{
    std::vector<uint8_t> f = {0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0x88, 0xa8};
    for (int i = 0; i < 8; ++i)
        f.insert(f.end(), {0xff, 0xff, 0x88, 0xa8});
    f[f.size() - 2] = 0x86; // the last tag's ethertype: IPv6
    f[f.size() - 1] = 0xdd;
    const size_t ip = f.size();
    f.insert(f.end(), 40, 0xff);
    f[ip] = 0x6f;
    f[ip + 4] = 0xff;
    f[ip + 5] = 0xff;
    f[ip + 6] = 43; // routing headers, each "RT6 (len=0, type=0 [Deprecated], segleft=255) "
    for (int i = 0; i < 16; ++i)
        f.insert(f.end(), {static_cast<uint8_t>(i < 15 ? 43 : 58), 0, 0, 0xff, 0, 0, 0, 0});
    f.insert(f.end(), {1, 200, 0, 0, 0, 0, 0, 0});
    f.insert(f.end(), 48, 0xff);
    DecodeOptions options;
    options.link_header = true;
    const std::string line = decode(f, f.size(), options);
    EXPECT_GT(line.size(), 1000u);
    EXPECT_LT(line.size() + 512, xdpcap::text::kMaxDecodeLength) << line;
    EXPECT_NE(line.find("ICMP6, destination unreachable, unknown unreach code (200)"), std::string::npos) << line;
    EXPECT_EQ(line.find("[|"), std::string::npos) << line;
}

// A message tcpdump does not decode is dumped in the line itself: the room
// decode_frame() needs grows with the frame.
TEST(TextDecode, UnknownMessageDumpFitsItsBound)
{
    std::vector<uint8_t> f = from_hex("020000000002020000000001" "86dd"
                                      "6000000005c83a40" "20010db8000000000000000000000001"
                                      "20010db8000000000000000000000002");
    f.push_back(79); // no ICMPv6 type tcpdump knows
    f.insert(f.end(), 1479, 0x4f);
    const uint32_t caplen = static_cast<uint32_t>(f.size());
    std::vector<char> out(xdpcap::text::decode_length_bound(caplen) + 1, '\x5a');
    Writer w(out.data(), out.size() - 1);
    xdpcap::text::decode_frame(w, f.data(), caplen, caplen, DecodeOptions{});
    EXPECT_FALSE(w.full());
    EXPECT_GT(w.size(), 4000u);
    EXPECT_EQ(out.back(), '\x5a');
    const std::string line(out.data(), w.size());
    EXPECT_EQ(line.rfind("IP6 2001:db8::1 > 2001:db8::2: ICMP6, unknown icmp6 type (79), length 1480\n\t0x0000:  4f4f", 0), 0u)
        << line.substr(0, 200);
    EXPECT_TRUE(line.ends_with("\n\t0x05c0:  4f4f 4f4f 4f4f 4f4f")) << line.substr(line.size() - 80);
}

// Where tcpdump abandons a cut packet (a read past the capture), its -x
// dump starts at the frame's first byte; where it checks and marks the cut
// itself, after the link header. decode_frame() says which by the link
// length it returns.
TEST(TextDecode, AbandonedPacketsDumpFromTheFirstByte)
{
    const auto echo = from_hex("020000000002020000000001080045000024000140004001ae6ac6120001c6120002"
                               "0800f7fe0001000170696e67");
    char out[4096];
    const auto link_length = [&](size_t caplen) {
        Writer w(out, sizeof out);
        return xdpcap::text::decode_frame(w, echo.data(), static_cast<uint32_t>(caplen),
                                          static_cast<uint32_t>(echo.size()), DecodeOptions{});
    };
    EXPECT_EQ(link_length(echo.size()), 14u);
    EXPECT_EQ(link_length(14 + 20 + 1), 0u);  // ICMP's code not captured: abandoned
    EXPECT_EQ(link_length(14), 0u);           // nothing of IPv4: abandoned
    EXPECT_EQ(link_length(14 + 10), 14u);     // "IP  [|ip]": tcpdump's own check
    DecodeOptions a;
    a.ascii = 1;
    // tcpdump's -A: a CR is a '.' only with two bytes or more after it.
    auto text = echo;
    text.insert(text.end(), {'a', '\r', 'b', 'c', '\r', 'd'});
    text[17] = static_cast<uint8_t>(text.size() - 14);
    const std::string dump = decode(text, text.size(), a);
    EXPECT_TRUE(dump.ends_with("pinga.bcd")) << dump;
}

// A buffer too small for the line: cut, never overrun.
TEST(TextDecode, SmallBufferIsNeverOverrun)
{
    const auto bytes = frame("QinQ");
    for (size_t room = 0; room < 200; ++room) {
        std::vector<char> out(room + 8, '#');
        Writer w(out.data(), room);
        DecodeOptions options;
        options.link_header = true;
        options.hex_ascii = 2;
        xdpcap::text::format_frame(w, bytes.data(), static_cast<uint32_t>(bytes.size()),
                                   static_cast<uint32_t>(bytes.size()), options);
        EXPECT_LE(w.size(), room);
        for (size_t i = room; i < out.size(); ++i)
            EXPECT_EQ(out[i], '#') << room;
    }
}

// Dumps as tcpdump lays them out: offset, 16 bytes per line in groups of
// two, ASCII after; without the link-level header unless doubled.
TEST(TextDecode, Dumps)
{
    const auto bytes = frame("TcpPushData");
    const std::string line = decode(bytes, bytes.size());
    const struct {
        uint8_t hex, hex_ascii, ascii;
        const char* dump;
    } cases[] = {
        {1, 0, 0,
         "\n\t0x0000:  4500 0035 0001 0000 4006 ee9a c612 0001"
         "\n\t0x0010:  c612 0002 04d2 1f90 0000 03e8 0000 07d0"
         "\n\t0x0020:  5018 0200 55a2 0000 6865 6c6c 6f20 776f"
         "\n\t0x0030:  726c 640d 0a" },
        {2, 0, 0,
         "\n\t0x0000:  0200 0000 0002 0200 0000 0001 0800 4500"
         "\n\t0x0010:  0035 0001 0000 4006 ee9a c612 0001 c612"
         "\n\t0x0020:  0002 04d2 1f90 0000 03e8 0000 07d0 5018"
         "\n\t0x0030:  0200 55a2 0000 6865 6c6c 6f20 776f 726c"
         "\n\t0x0040:  640d 0a" },
        {0, 1, 0,
         "\n\t0x0000:  4500 0035 0001 0000 4006 ee9a c612 0001  E..5....@......."
         "\n\t0x0010:  c612 0002 04d2 1f90 0000 03e8 0000 07d0  ................"
         "\n\t0x0020:  5018 0200 55a2 0000 6865 6c6c 6f20 776f  P...U...hello.wo"
         "\n\t0x0030:  726c 640d 0a                             rld.." },
        {0, 2, 0,
         "\n\t0x0000:  0200 0000 0002 0200 0000 0001 0800 4500  ..............E."
         "\n\t0x0010:  0035 0001 0000 4006 ee9a c612 0001 c612  .5....@........."
         "\n\t0x0020:  0002 04d2 1f90 0000 03e8 0000 07d0 5018  ..............P."
         "\n\t0x0030:  0200 55a2 0000 6865 6c6c 6f20 776f 726c  ..U...hello.worl"
         "\n\t0x0040:  640d 0a                                  d.." },
        {0, 0, 1,
         "\nE..5....@.......................P...U...hello world"
         "\n" },
    };
    for (const auto& c : cases) {
        DecodeOptions options;
        options.hex = c.hex;
        options.hex_ascii = c.hex_ascii;
        options.ascii = c.ascii;
        EXPECT_EQ(decode(bytes, bytes.size(), options), line + c.dump);
    }
}

// Records whose lengths cannot be: tcpdump's words, in its order.
TEST(TextDecode, InvalidHeaders)
{
    const struct {
        uint32_t caplen, origlen;
        const char* text;
    } cases[] = {
        {0, 0, "[Invalid header: caplen==0, len==0]"},
        {0, 60, "[Invalid header: caplen==0]"},
        {42, 10, "[Invalid header: len(10) < caplen(42)]"},
        {42, 0, "[Invalid header: len==0]"},
        {42, 300000, "[Invalid header: len(300000) > 262144]"},
        {300000, 300001, "[Invalid header: caplen(300000) > 262144, len(300001) > 262144]"},
        {42, 42, ""},
        {40, 262144, ""},
    };
    for (const auto& c : cases) {
        char buffer[128];
        xdpcap::text::Writer out(buffer, sizeof buffer);
        EXPECT_EQ(xdpcap::text::put_invalid_header(out, c.caplen, c.origlen), *c.text != '\0');
        EXPECT_EQ(std::string(out.view()), c.text) << c.caplen << " " << c.origlen;
    }
}

// tcpdump's -t formats, micro- and nanoseconds.
TEST(TextTimestamp, Formats)
{
    ::setenv("TZ", "UTC", 1);
    ::tzset();
    using xdpcap::text::TimeFormat;
    using xdpcap::text::TimestampPrinter;
    const uint64_t first = 1'795'431'326'896'062'123ull; // 2026-11-23 10:55:26 UTC
    const uint64_t second = first + 3'723'000'378'000ull; // 1 h 2 min 3.000378 s later
    const struct {
        unsigned t;
        bool nano;
        const char* first_text;
        const char* second_text;
    } cases[] = {
        {0, false, "10:55:26.896062 ", "11:57:29.896440 "},
        {0, true, "10:55:26.896062123 ", "11:57:29.896440123 "},
        {1, false, "", ""},
        {2, false, "1795431326.896062 ", "1795435049.896440 "},
        {3, false, " 00:00:00.000000 ", " 01:02:03.000378 "},
        {3, true, " 00:00:00.000000000 ", " 01:02:03.000378000 "},
        {4, false, "2026-11-23 10:55:26.896062 ", "2026-11-23 11:57:29.896440 "},
        {5, false, " 00:00:00.000000 ", " 01:02:03.000378 "},
    };
    for (const auto& c : cases) {
        TimestampPrinter printer(xdpcap::text::time_format_for(c.t), c.nano);
        char buffer[64];
        Writer a(buffer, sizeof buffer);
        printer.put(a, first);
        EXPECT_EQ(std::string(a.view()), c.first_text) << c.t;
        Writer b(buffer, sizeof buffer);
        printer.put(b, second);
        EXPECT_EQ(std::string(b.view()), c.second_text) << c.t;
    }
    // -ttt counts from the previous packet, -ttttt from the first.
    TimestampPrinter delta(TimeFormat::Delta, false), since(TimeFormat::SinceFirst, false);
    char buffer[64];
    for (uint64_t t : {first, first + uint64_t{1'000'000}, first + uint64_t{3'000'000}}) {
        Writer a(buffer, sizeof buffer);
        delta.put(a, t);
        Writer b(buffer + 32, 32);
        since.put(b, t);
        if (t == first + uint64_t{3'000'000}) {
            EXPECT_EQ(std::string(a.view()), " 00:00:00.002000 ");
            EXPECT_EQ(std::string(b.view()), " 00:00:00.003000 ");
        }
    }
    // An older packet (a file out of order): a minus sign, as tcpdump's.
    Writer c(buffer, sizeof buffer);
    delta.put(c, first + uint64_t{1'000'000});
    EXPECT_EQ(std::string(c.view()), "-00:00:00.002000 ");
    Writer d(buffer, sizeof buffer);
    since.put(d, first - uint64_t{5'000});
    EXPECT_EQ(std::string(d.view()), "-00:00:00.000005 ");
}

} // namespace

// tcpdump's relative numbers: the SYN-ACK records the connection, what
// follows in either direction is counted from it; -S (no table) is absolute.
TEST(TextDecode, RelativeSequenceNumbers)
{
    const auto syn_ack = from_hex("02000000710202000000710108004500003c471140004006d982c6124702c6124701138aa410000023280000"
                                  "1389a012faf000000000020405b40402080a7422c7ce0000000001030307");
    // 198.18.71.1.42000 > .2.5002 [.] seq 5001 ack 9001, and the reverse with 10 bytes.
    auto ack = from_hex("020000007102020000007101080045000028471140004006d996c6124701c6124702a410138a0000138900002329"
                        "501001f600000000");
    auto data = from_hex("020000007101020000007102080045000032471140004006d98cc6124702c6124701138aa41000002329000013"
                         "89501801f6000000006161616161616161616161");
    xdpcap::text::TcpFlows flows;
    DecodeOptions relative;
    relative.tcp_flows = &flows;
    EXPECT_NE(decode(syn_ack, syn_ack.size(), relative).find("seq 9000, ack 5001,"), std::string::npos);
    EXPECT_NE(decode(ack, ack.size(), relative).find("Flags [.], ack 1, win 502"), std::string::npos)
        << decode(ack, ack.size(), relative);
    EXPECT_NE(decode(data, data.size(), relative).find("seq 1:11, ack 1, win 502"), std::string::npos)
        << decode(data, data.size(), relative);
    EXPECT_NE(decode(data, data.size()).find("seq 9001:9011, ack 5001,"), std::string::npos);
    EXPECT_EQ(flows.size(), 1u);
}

// The table never grows past its size, and what was just recorded is found.
TEST(TextTcpFlows, BoundedAndFindsTheNewest)
{
    xdpcap::text::TcpFlows flows;
    for (uint32_t i = 0; i < 3 * xdpcap::text::TcpFlows::kCapacity; ++i) {
        xdpcap::text::TcpFlows::Key key;
        key.family = 4;
        std::memcpy(key.src, &i, sizeof i);
        key.ports = i;
        flows.insert(key).seq = i;
        ASSERT_NE(flows.find(key), nullptr);
        EXPECT_EQ(flows.find(key)->seq, i);
    }
    EXPECT_LE(flows.size(), xdpcap::text::TcpFlows::kCapacity);
    EXPECT_GT(flows.size(), xdpcap::text::TcpFlows::kCapacity / 2);
}

// HTTP's first line and SSH's banner, by port, as tcpdump 4.99 prints them
// (checked against it in tests/e2e/test_read.py and tests/tcpdump).
TEST(TextDecode, ApplicationFirstLines)
{
    // 198.18.71.1.41000 > .2.PORT [P.] with PAYLOAD: Ethernet, IPv4, TCP (no checksums needed).
    const auto segment = [](uint16_t sport, uint16_t dport, std::string_view payload) {
        std::vector<uint8_t> f = from_hex("020000007102020000007101080045000000471140004006d996c6124701c6124702");
        const size_t ip_length = 20 + 20 + payload.size();
        f[16] = static_cast<uint8_t>(ip_length >> 8);
        f[17] = static_cast<uint8_t>(ip_length);
        const uint8_t tcp[20] = {static_cast<uint8_t>(sport >> 8), static_cast<uint8_t>(sport),
                                 static_cast<uint8_t>(dport >> 8), static_cast<uint8_t>(dport), 0, 0, 0, 1, 0, 0, 0, 1,
                                 0x50, 0x18, 0x01, 0xf6, 0, 0, 0, 0};
        f.insert(f.end(), tcp, tcp + 20);
        f.insert(f.end(), payload.begin(), payload.end());
        return f;
    };
    const auto tail = [](const std::string& line) { return line.substr(line.find("length ")); };
    const auto http = segment(41000, 80, "GET /a HTTP/1.1\r\nHost: x\r\n\r\n");
    EXPECT_EQ(tail(decode(http, http.size())), "length 28: HTTP: GET /a HTTP/1.1");
    EXPECT_EQ(tail(decode(http, 54 + 8)), "length 28: HTTP [|http]"); // cut in the line
    EXPECT_EQ(tail(decode(http, 54 + 2)), "length 28: HTTP");         // cut in the method: not recognised
    const auto response = segment(80, 41000, "HTTP/1.0 404 Not Found\n");
    EXPECT_EQ(tail(decode(response, response.size())), "length 23: HTTP: HTTP/1.0 404 Not Found");
    const auto binary = segment(41000, 8080, std::string_view("\x16\x03\x01", 3));
    EXPECT_EQ(tail(decode(binary, binary.size())), "length 3: HTTP");
    const auto no_end = segment(41000, 80, "HEAD /x");
    EXPECT_EQ(tail(decode(no_end, no_end.size())), "length 7: HTTP: HEAD /x [|http]");
    const auto ssh = segment(22, 41000, "SSH-2.0-OpenSSH_9.2\r\n");
    EXPECT_EQ(tail(decode(ssh, ssh.size())), "length 21: SSH: SSH-2.0-OpenSSH_9.2");
    EXPECT_EQ(tail(decode(ssh, 54 + 10)), "length 21 [|ssh]");
    const auto ssh_data = segment(41000, 22, std::string_view("\0\0\1\x0c", 4));
    EXPECT_EQ(tail(decode(ssh_data, ssh_data.size())), "length 4");
    const auto other = segment(41000, 9999, "GET / HTTP/1.1\r\n");
    EXPECT_EQ(tail(decode(other, other.size())), "length 16");
}

// A file's strings as packet bytes are printed: nothing a terminal acts on.
TEST(TextDecode, EscapedStrings)
{
    EXPECT_EQ(xdpcap::text::escaped("eth0@cpu3"), "eth0@cpu3");
    EXPECT_EQ(xdpcap::text::escaped(std::string_view("a\x1b]2;X\x07\r\n\t\x7f\0z", 13)), "a^[]2;X^G^M^J^I^?^@z");
    // C1 controls, bytes that are no UTF-8 and UTF-8 alike: 7 bits after M-.
    EXPECT_EQ(xdpcap::text::escaped("\x9b\x85\xff\xc3\xa9"), "M-^[M-^EM-^?M-CM-)");
    EXPECT_EQ(xdpcap::text::escaped(""), "");
}
