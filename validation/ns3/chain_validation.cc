// ns-3 reference runs for the multihop chain (validation/chain.py runs the udp mode beside the
// model in virtual time; docs/testbed.md, "The multihop chain"; the tcp mode gives reference
// figures for the chain scenarios).
//
// n nodes on a line, 200 m apart, ad hoc 802.11 at DSSS 1 Mbit/s for every frame (data and
// control, long preamble), RTS/CTS before every frame, static routes along the line (no AODV),
// ARP caches filled before the traffic starts, no traffic-control layer (each node's only queue is
// its MAC queue: `--queue` packets, as the test bed's per-transmitter medium buffer). One flow from
// the first node to the last:
//
//   udp   saturated UDP: the source offers more than the chain carries (1012-byte payloads:
//         1040-byte IP packets, the paper's); the throughput is what the last node receives.
//   tcp   one bulk TCP transfer (NewReno with SACK and timestamps, Linux's 200 ms minimum RTO and
//         initial window of 10), 988-byte segments (1040-byte IP packets with timestamps), the
//         receiver ACKing every `--delack` segments or after `--delack_ms`, the window limited to
//         `--window` segments by the receiver's buffer; it also counts the sender's data segments
//         and retransmissions.
//   echo  `--echo_pps` 1040-byte UDP packets per second from the first node, each echoed back by
//         the last: a two-way load at a set rate, the model's `offer` and `reply` rules.
//
// The chain's geometry is the model's (topologies/wireless.py CHAIN_RANGES: decode within 250 m,
// carrier sense and interference within 550 m, capture at 1.78 x the frame's distance), and its
// reception rule is ns-2's, which Altman and Jimenez ran:
//   - ChainLoss: a node at most 250 m away is received at -80 dBm, one at most 550 m away at
//     -87 dBm, one further away not at all; every frame that reaches a node is detected
//     (preamble detection from -90 dBm, 4 dB) and keeps CCA busy;
//   - ChainReception (each PHY's post-reception error model) decides which of the frames a PHY
//     received are lost: those from beyond 250 m (the node waits EIFS after them, as the
//     model's station does after a frame it senses but cannot decode), and those ns-2's receiver
//     loses (mac-802_11.cc recv(): it locks onto the first frame to arrive while it receives
//     nothing; a later one is ignored when 10 dB weaker, otherwise both are lost).
//   ns-3's own error model cannot say this: ErrorRateModel::GetChunkSuccessRate (3.37) sends DSSS
//   rates to DsssErrorRateModel without asking a subclass, and DBPSK with its 22x spreading
//   decodes a frame at 6.6 dB SNR (400 m) and one under interference at 0 dB SINR. Until issue 38
//   this program installed a threshold model that was never called: its nodes decoded each other
//   up to 550 m and no collision lost a frame that had started first (2 data failures in 60 s
//   of 4-node echo at 25 packets/s, against 153 with the rule).
//   - ChainRateManager: dot11ShortRetryLimit (7) applies to RTS failures (ns-3 3.37 never gives a
//     frame up for them when every frame uses RTS/CTS; see the class).
//   - ChainBackoff: a frame queued before the medium has been idle for DIFS backs off, as in ns-2
//     and the model; ns-3 3.37 let a relay forward DIFS after its ACK with no backoff (see the
//     struct; --ns2_backoff=0 restores ns-3's rule, for comparison).
// In tcp mode the sender's buffer is W segments like the receiver's (ns-3 3.37's bug 991 crashed
// the runs with small windows otherwise; see the SndBufSize default below).
// --trace=PATH writes one line per PHY transmission, reception (ok or error, with SNR), drop (with
// ns-3's reason), frame lost to the rule (with the reason and the other transmitter) and MAC
// failure, for frame-by-frame comparisons with the model's events.
//
// It prints one JSON line: packets per second received by the last node over the measurement, the
// echoes sent and received (over the run, and over the measurement), and the MAC's counters over
// the run (data PPDUs sent, data and RTS failures, and those given up at the retry limits; frames
// dropped from a full MAC queue are not among them: ns-3 3.37's MacTxDrop does not report them).
// backoffs_drawn counts the frames ChainBackoff gave a backoff that ns-3 would have sent at once.
#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/mobility-module.h"
#include "ns3/network-module.h"
#include "ns3/traffic-control-module.h"
#include "ns3/wifi-module.h"

#include <cmath>
#include <deque>
#include <fstream>
#include <map>
#include <set>
#include <vector>
#include <algorithm>
#include <iomanip>
#include <iostream>
#include <sstream>

using namespace ns3;

namespace {

const double kSpacingM = 200;
const double kDecodeRangeM = 250, kSenseRangeM = 550;
const double kNearDbm = -80, kFarDbm = -87;  // received power within 250 m, within 550 m

class ChainLoss : public PropagationLossModel {
  public:
    static TypeId GetTypeId() {
        static TypeId tid = TypeId("ChainLoss").SetParent<PropagationLossModel>().AddConstructor<ChainLoss>();
        return tid;
    }

  private:
    double DoCalcRxPower(double, Ptr<MobilityModel> a, Ptr<MobilityModel> b) const override {
        double d = a->GetDistanceFrom(b);
        return d <= kDecodeRangeM ? kNearDbm : d <= kSenseRangeM ? kFarDbm : -300;
    }
    int64_t DoAssignStreams(int64_t) override { return 0; }
};

std::ofstream trace_out;  // --trace: one line per PHY event (for frame-by-frame comparisons)
std::string Describe(Ptr<const Packet> p);

// Every transmission on the chain, for the reception rule below: its node, its packet's UID, and
// when it started and ended at its transmitter (end unknown while it is on the air).
struct Transmission {
    uint32_t node;
    uint64_t uid;
    Time start, end;
};
std::deque<Transmission> on_air;
const double kCaptureRatio = std::pow(10.0, 10.0 / 40);  // wireless.ChainGeometry.capture_ratio

Time Arrival(Time at, uint32_t from, uint32_t to) {  // ConstantSpeedPropagationDelayModel's
    return at + Seconds(kSpacingM * std::abs(int(from) - int(to)) / 299792458.0);
}

// The chain's reception rule (the model's and ns-2's; the top of this file), applied to every
// frame a node's PHY received, as its PostReceptionErrorModel.
class ChainReception : public ErrorModel {
  public:
    static TypeId GetTypeId() {
        static TypeId tid = TypeId("ChainReception").SetParent<ErrorModel>().AddConstructor<ChainReception>();
        return tid;
    }
    uint32_t node = 0;

  private:
    bool DoCorrupt(Ptr<Packet> p) override {
        // The transmission whose reception ends here now. A packet keeps its UID from hop to hop
        // and across TCP retransmissions (and a segment built from several application writes
        // takes its first write's), so several transmissions on the air within the last 100 ms
        // can share it: the latest of them, which this took until issue 38's TCP runs, was at
        // times another node's, and a frame from a neighbour was lost as "out of range" (9 nodes,
        // TCP, W = 2000: 1057 data frames in 25 s, 7.9 pkt/s instead of 15.2).
        const Transmission *f = nullptr;
        for (const Transmission &t : on_air)
            if (t.uid == p->GetUid() && t.node != node && !t.end.IsZero() &&
                (!f || Abs(ArrivalEnd(t) - Simulator::Now()) < Abs(ArrivalEnd(*f) - Simulator::Now())))
                f = &t;
        if (!f) return false;
        if (Distance(*f) > kDecodeRangeM) return Lost(p, f, "range", nullptr);
        // ns-2's receiver, replayed over the transmissions that reached this node: it locks onto
        // the first to arrive while it receives nothing; one arriving while it receives another
        // is ignored when kCaptureRatio times as far (and disturbs nothing later), otherwise both
        // are lost and it goes on receiving the one that ends later.
        std::vector<const Transmission *> heard;
        for (const Transmission &j : on_air)
            if (j.node != node && Distance(j) <= kSenseRangeM && ArrivalStart(j) < Simulator::Now()) heard.push_back(&j);
        std::stable_sort(heard.begin(), heard.end(),
                         [this](const Transmission *x, const Transmission *y) { return ArrivalStart(*x) < ArrivalStart(*y); });
        const Transmission *held = nullptr;
        std::set<const Transmission *> lost;
        const Transmission *why = nullptr;
        for (const Transmission *j : heard) {
            if (held && ArrivalEnd(*held) <= ArrivalStart(*j)) held = nullptr;
            if (!held) {
                held = j;
            } else if (Distance(*j) >= kCaptureRatio * Distance(*held)) {
                lost.insert(j);
            } else {
                lost.insert(j);
                lost.insert(held);
                if (j == f || held == f) why = j == f ? held : j;
                if (ArrivalEnd(*j) > ArrivalEnd(*held)) held = j;
            }
            if (j == f && lost.count(f) && !why) why = held;
        }
        if (lost.count(f)) return Lost(p, f, "collision", why);
        return false;
    }
    double Distance(const Transmission &t) const { return kSpacingM * std::abs(int(t.node) - int(node)); }
    Time ArrivalStart(const Transmission &t) const { return Arrival(t.start, t.node, node); }
    Time ArrivalEnd(const Transmission &t) const {  // still on the air: not before now
        return t.end.IsZero() ? Simulator::Now() + Seconds(1) : Arrival(t.end, t.node, node);
    }
    bool Lost(Ptr<const Packet> p, const Transmission *f, const char *why, const Transmission *j) const {
        if (trace_out.is_open())
            trace_out << Simulator::Now().GetNanoSeconds() << ' ' << node << " lost " << Describe(p) << ' ' << f->node
                      << ' ' << why << ' ' << (j ? int(j->node) : -1) << ' '
                      << (j ? (j->start - f->start).GetMicroSeconds() : 0) << '\n';
        return true;
    }
    void DoReset() override {}
};

// ConstantRateWifiManager with dot11ShortRetryLimit applied to RTS failures. ns-3 3.37 counts a
// failed RTS in the station's SSRC but, for an MPDU longer than the RTS threshold (every MPDU here:
// the threshold is 0), NeedRetransmission compares the SLRC with MaxSlrc, so a frame whose RTS
// never gets a CTS is retried for ever (a CTS that never comes: the receiver's NAV is set, or a
// hidden terminal keeps corrupting the RTS). 10.3.4.4, ns-2 (ShortRetryLimit_ 7) and the model give
// the frame up after 7 RTS without a CTS.
class ChainRateManager : public ConstantRateWifiManager {
  public:
    static TypeId GetTypeId() {
        static TypeId tid =
            TypeId("ChainRateManager").SetParent<ConstantRateWifiManager>().AddConstructor<ChainRateManager>();
        return tid;
    }

  private:
    std::map<WifiRemoteStation *, uint32_t> rts_failures;  // since the last CTS, per receiver
    void DoReportRtsFailed(WifiRemoteStation *st) override { rts_failures[st]++; }
    void DoReportRtsOk(WifiRemoteStation *st, double, WifiMode, double) override { rts_failures[st] = 0; }
    void DoReportFinalRtsFailed(WifiRemoteStation *st) override { rts_failures[st] = 0; }
    bool DoNeedRetransmission(WifiRemoteStation *st, Ptr<const Packet>, bool normally) override {
        return normally && rts_failures[st] < kShortRetryLimit;
    }
    static const uint32_t kShortRetryLimit = 7;
};

// The backoff of a frame queued at a MAC that has nothing to send and no backoff pending. ns-3 3.37
// (ChannelAccessManager::NeedBackoffUponAccess) draws one only if the medium is busy at that
// instant, and a relay's frame is queued the instant its reception ends, when the PHY is idle for
// a moment before the ACK: so a relay sent every frame DIFS after its ACK with no backoff at all.
// ns-2 draws a backoff there (Mac802_11::send(): rx_state_ is still MAC_RECV, so
// mhBackoff_.start(cw_)), and so does the model (medium_enqueue: a frame queued before the medium
// has been idle for DIFS backs off), as 10.3.4.2 reads ("the medium ... remains idle for a period
// of a DIFS"). ChainBackoff hooks each MAC queue's Enqueue and, where ns-3 has just granted such
// an immediate access, starts a backoff drawn from [0, CW] instead; a frame queued after DIFS of
// idle medium still goes at once, as in the model.
struct ChainBackoff {
    // GetBackoffSlots and GetCw are protected; a member pointer taken through a subclass reads them.
    struct Peek : Txop {
        static uint32_t Slots(const Txop &t) { return (t.*&Peek::GetBackoffSlots)(0); }
        static uint32_t Cw(const Txop &t) { return (t.*&Peek::GetCw)(0); }
    };
    Ptr<Txop> txop;
    Ptr<ChannelAccessManager> cam;
    Time slot;
    Ptr<UniformRandomVariable> rng;
    uint64_t drawn = 0;
    void Enqueued(Ptr<const WifiMpdu>) {
        if (txop->GetWifiMacQueue()->GetNPackets() != 1 || txop->GetAccessStatus(0) == Txop::GRANTED) return;
        if (cam->IsBusy() || Peek::Slots(*txop) != 0) return;  // ns-3 drew one, or one is pending
        // GetAccessGrantStart: the end of the last busy period (EIFS after an error) plus SIFS
        if (Simulator::Now() >= cam->GetAccessGrantStart() + txop->GetAifsn(0) * slot) return;
        txop->StartBackoffNow(rng->GetInteger(0, Peek::Cw(*txop)), 0);
        drawn++;
    }
};
std::vector<ChainBackoff *> chain_backoffs;
uint64_t backoffs_drawn() {
    uint64_t n = 0;
    for (const ChainBackoff *b : chain_backoffs) n += b->drawn;
    return n;
}

uint64_t mac_tx_failed = 0, mac_tx_dropped = 0, mac_queue_dropped = 0;
uint64_t mac_rts_failed = 0, mac_rts_dropped = 0;
uint64_t tcp_data_sent = 0, tcp_retransmitted = 0;
SequenceNumber32 tcp_highest_sent(0);
bool tcp_seen_data = false;
uint64_t echo_sent = 0, echo_received = 0;
uint64_t data_frames = 0;  // data PPDUs sent (every attempt), all nodes
uint32_t ContextNode(const std::string &context) {  // "/NodeList/3/DeviceList/..." -> 3
    return std::stoul(context.substr(10, context.find('/', 10) - 10));
}

// The frame's kind and its transmitter's and receiver's node numbers (MAC addresses are assigned
// in node order from 00:00:00:00:00:01).
std::string Describe(Ptr<const Packet> p) {
    WifiMacHeader h;
    std::ostringstream o;
    if (!p->PeekHeader(h)) return "? ? ?";
    uint8_t a[6];
    h.GetAddr1().CopyTo(a);
    int to = int(a[5]) - 1;
    int from = -1;
    if (h.IsData() || h.IsRts()) {
        h.GetAddr2().CopyTo(a);
        from = int(a[5]) - 1;
    }
    o << (h.IsRts() ? "RTS" : h.IsCts() ? "CTS" : h.IsAck() ? "ACK" : h.IsData() ? "DATA" : "OTHER") << ' ' << from << ' '
      << to << ' ' << h.GetDuration().GetMicroSeconds();
    return o.str();
}

}  // namespace

int main(int argc, char **argv) {
    std::string mode = "udp", trace_path;
    uint32_t nodes = 3, window = 2000, delack = 1, queue_pkts = 50, seed = 1;
    double delack_ms = 100, warmup_s = 5, measure_s = 60;
    bool sack = true, ns2_backoff = true;
    CommandLine cmd;
    double echo_pps = 5;
    cmd.AddValue("mode", "udp, tcp or echo", mode);
    cmd.AddValue("echo_pps", "echo: packets per second the first node sends (each echoed back by the last)", echo_pps);
    cmd.AddValue("nodes", "nodes on the line (hops + 1)", nodes);
    cmd.AddValue("window", "tcp: the maximum window, segments (the receiver's buffer)", window);
    cmd.AddValue("delack", "tcp: the receiver ACKs every this many segments (1: an ACK per segment)", delack);
    cmd.AddValue("delack_ms", "tcp: ... or this long after the first unacknowledged one", delack_ms);
    cmd.AddValue("sack", "tcp: SACK", sack);
    cmd.AddValue("ns2_backoff", "a frame queued before DIFS of idle medium backs off (ns-2, the model; ChainBackoff)", ns2_backoff);
    cmd.AddValue("queue", "MAC queue, packets per node", queue_pkts);
    cmd.AddValue("seed", "run number", seed);
    cmd.AddValue("trace", "write every PHY transmission, reception and drop, and every MAC failure, to this file", trace_path);
    cmd.AddValue("warmup", "seconds of traffic before measuring", warmup_s);
    cmd.AddValue("measure", "seconds measured", measure_s);
    cmd.Parse(argc, argv);
    if (nodes < 2 || (mode != "udp" && mode != "tcp" && mode != "echo")) {
        std::cerr << "give --mode=udp|tcp|echo and --nodes >= 2\n";
        return 2;
    }
    RngSeedManager::SetSeed(12345);
    RngSeedManager::SetRun(seed);
    const uint32_t segment = 988;  // payload of a 1040-byte IP packet with the timestamps option
    Config::SetDefault("ns3::WifiMacQueue::MaxSize", QueueSizeValue(QueueSize(std::to_string(queue_pkts) + "p")));
    Config::SetDefault("ns3::TcpL4Protocol::SocketType", TypeIdValue(TcpNewReno::GetTypeId()));
    Config::SetDefault("ns3::TcpL4Protocol::RecoveryType", TypeIdValue(TcpClassicRecovery::GetTypeId()));
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(segment));
    Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(10));
    Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(delack));
    Config::SetDefault("ns3::TcpSocket::DelAckTimeout", TimeValue(MilliSeconds(delack_ms)));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(window * segment));
    // The sender's buffer holds the window too (W segments, written a segment at a time): ns-3
    // 3.37's TcpTxBuffer::NextSeg offers a zero-length segment of new data when the data sent and
    // unacknowledged equals the receiver's window and a SACK block or a duplicate ACK (limited
    // transmit) has taken some of it out of the pipe ("m_sentSize <= m_rWndCallback()"; ns-3 bug
    // 991, fixed in 3.41 by "<"), and TcpRateLinux::SkbSent dereferences the null segment. With no
    // unsent data beyond the window that rule is never reached; the window is W either way.
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(window * segment));
    Config::SetDefault("ns3::TcpSocketBase::Sack", BooleanValue(sack));
    Config::SetDefault("ns3::TcpSocketBase::Timestamp", BooleanValue(true));
    Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(MilliSeconds(200)));

    NodeContainer chain;
    chain.Create(nodes);
    WifiHelper wifi;
    wifi.SetStandard(WIFI_STANDARD_80211b);
    ChainRateManager::GetTypeId();  // registered before the helper looks it up by name
    wifi.SetRemoteStationManager("ChainRateManager", "DataMode", StringValue("DsssRate1Mbps"),
                                 "ControlMode", StringValue("DsssRate1Mbps"), "RtsCtsThreshold", UintegerValue(0));
    Ptr<YansWifiChannel> channel = CreateObject<YansWifiChannel>();
    channel->SetPropagationLossModel(CreateObject<ChainLoss>());
    channel->SetPropagationDelayModel(CreateObject<ConstantSpeedPropagationDelayModel>());
    YansWifiPhyHelper phy;
    phy.SetChannel(channel);
    phy.Set("TxPowerStart", DoubleValue(0));
    phy.Set("TxPowerEnd", DoubleValue(0));
    phy.Set("RxSensitivity", DoubleValue(-95));
    phy.Set("CcaEdThreshold", DoubleValue(-90));
    phy.Set("CcaSensitivity", DoubleValue(-90));
    phy.SetPreambleDetectionModel("ns3::ThresholdPreambleDetectionModel", "MinimumRssi", DoubleValue(-90),
                                  "Threshold", DoubleValue(4));
    WifiMacHelper mac;
    mac.SetType("ns3::AdhocWifiMac");
    NetDeviceContainer devs = wifi.Install(phy, mac, chain);
    for (uint32_t i = 0; i < devs.GetN(); i++) {
        Ptr<ChainReception> rule = CreateObject<ChainReception>();
        rule->node = i;
        DynamicCast<WifiNetDevice>(devs.Get(i))->GetPhy()->SetPostReceptionErrorModel(rule);
        if (ns2_backoff) {
            Ptr<WifiNetDevice> dev = DynamicCast<WifiNetDevice>(devs.Get(i));
            auto *b = new ChainBackoff{dev->GetMac()->GetTxop(), dev->GetMac()->GetChannelAccessManager(),
                                       dev->GetPhy()->GetSlot(), CreateObject<UniformRandomVariable>()};
            b->txop->GetWifiMacQueue()->TraceConnectWithoutContext("Enqueue", MakeCallback(&ChainBackoff::Enqueued, b));
            chain_backoffs.push_back(b);
        }
    }
    // The transmissions the rule looks at: each from its start to its end, forgotten 100 ms later.
    Config::Connect("/NodeList/*/DeviceList/*/$ns3::WifiNetDevice/Phy/PhyTxBegin",
                    MakeCallback(+[](std::string ctx, Ptr<const Packet> p, double) {
                        Time now = Simulator::Now();
                        while (!on_air.empty() && !on_air.front().end.IsZero() && on_air.front().end + MilliSeconds(100) < now)
                            on_air.pop_front();
                        on_air.push_back({ContextNode(ctx), p->GetUid(), now, Time(0)});
                    }));
    Config::Connect("/NodeList/*/DeviceList/*/$ns3::WifiNetDevice/Phy/PhyTxEnd",
                    MakeCallback(+[](std::string ctx, Ptr<const Packet> p) {
                        uint32_t n = ContextNode(ctx);
                        for (auto it = on_air.rbegin(); it != on_air.rend(); ++it)
                            if (it->node == n && it->uid == p->GetUid()) {
                                it->end = Simulator::Now();
                                break;
                            }
                    }));

    MobilityHelper mobility;
    Ptr<ListPositionAllocator> pos = CreateObject<ListPositionAllocator>();
    for (uint32_t i = 0; i < nodes; i++) pos->Add(Vector(kSpacingM * i, 0, 0));
    mobility.SetPositionAllocator(pos);
    mobility.SetMobilityModel("ns3::ConstantPositionMobilityModel");
    mobility.Install(chain);

    InternetStackHelper internet;
    internet.SetRoutingHelper(Ipv4StaticRoutingHelper());
    internet.Install(chain);
    Ipv4AddressHelper ipv4;
    ipv4.SetBase("10.1.0.0", "255.255.0.0");
    Ipv4InterfaceContainer ifs = ipv4.Assign(devs);
    // No traffic-control layer: the MAC queue is the node's one queue, as in the test bed.
    TrafficControlHelper::Default().Uninstall(devs);
    // Static routes along the line (the paper ran AODV; the test bed's relays forward statically).
    Ipv4StaticRoutingHelper routing;
    for (uint32_t i = 0; i < nodes; i++) {
        Ptr<Ipv4StaticRouting> r = routing.GetStaticRouting(chain.Get(i)->GetObject<Ipv4>());
        for (uint32_t j = 0; j < nodes; j++) {
            if (j == i || j == i + 1 || j + 1 == i) continue;
            uint32_t hop = j > i ? i + 1 : i - 1;
            r->AddHostRouteTo(ifs.GetAddress(j), ifs.GetAddress(hop), 1);
        }
    }
    NeighborCacheHelper().PopulateNeighborCache();

    Config::ConnectWithoutContext("/NodeList/*/DeviceList/*/$ns3::WifiNetDevice/RemoteStationManager/MacTxFinalDataFailed",
                                  MakeCallback(+[](Mac48Address) { mac_tx_dropped++; }));
    Config::ConnectWithoutContext("/NodeList/*/DeviceList/*/$ns3::WifiNetDevice/RemoteStationManager/MacTxDataFailed",
                                  MakeCallback(+[](Mac48Address) { mac_tx_failed++; }));
    Config::ConnectWithoutContext("/NodeList/*/DeviceList/*/$ns3::WifiNetDevice/RemoteStationManager/MacTxFinalRtsFailed",
                                  MakeCallback(+[](Mac48Address) { mac_rts_dropped++; }));
    Config::ConnectWithoutContext("/NodeList/*/DeviceList/*/$ns3::WifiNetDevice/RemoteStationManager/MacTxRtsFailed",
                                  MakeCallback(+[](Mac48Address) { mac_rts_failed++; }));
    Config::ConnectWithoutContext("/NodeList/*/DeviceList/*/$ns3::WifiNetDevice/Mac/MacTxDrop",
                                  MakeCallback(+[](Ptr<const Packet>) { mac_queue_dropped++; }));

    if (!trace_path.empty()) {
        // One line per event: time (ns), node, event, then the frame (kind, transmitter, receiver,
        // Duration field in us) and for a drop ns-3's reason.
        trace_out.open(trace_path);
        auto line = [](const std::string &ctx, const char *what) -> std::ostream & {
            return trace_out << Simulator::Now().GetNanoSeconds() << ' ' << ContextNode(ctx) << ' ' << what << ' ';
        };
        static auto s_line = line;
        Config::Connect("/NodeList/*/DeviceList/*/$ns3::WifiNetDevice/Phy/PhyTxBegin",
                        MakeCallback(+[](std::string ctx, Ptr<const Packet> p, double) {
                            s_line(ctx, "tx") << Describe(p) << '\n';
                        }));
        Config::Connect("/NodeList/*/DeviceList/*/$ns3::WifiNetDevice/Phy/State/RxOk",
                        MakeCallback(+[](std::string ctx, Ptr<const Packet> p, double snr, WifiMode, WifiPreamble) {
                            s_line(ctx, "rxok") << Describe(p) << ' ' << 10 * std::log10(snr) << '\n';
                        }));
        Config::Connect("/NodeList/*/DeviceList/*/$ns3::WifiNetDevice/Phy/State/RxError",
                        MakeCallback(+[](std::string ctx, Ptr<const Packet> p, double snr) {
                            s_line(ctx, "rxerr") << Describe(p) << ' ' << 10 * std::log10(snr) << '\n';
                        }));
        Config::Connect("/NodeList/*/DeviceList/*/$ns3::WifiNetDevice/Phy/PhyRxDrop",
                        MakeCallback(+[](std::string ctx, Ptr<const Packet> p, WifiPhyRxfailureReason why) {
                            s_line(ctx, "rxdrop") << Describe(p) << ' ' << why << '\n';
                        }));
        Config::Connect("/NodeList/*/DeviceList/*/$ns3::WifiNetDevice/RemoteStationManager/MacTxDataFailed",
                        MakeCallback(+[](std::string ctx, Mac48Address) { s_line(ctx, "datafail") << '\n'; }));
        Config::Connect("/NodeList/*/DeviceList/*/$ns3::WifiNetDevice/RemoteStationManager/MacTxRtsFailed",
                        MakeCallback(+[](std::string ctx, Mac48Address) { s_line(ctx, "rtsfail") << '\n'; }));
    }

    const uint16_t port = 5001;
    const Time start = Seconds(1.0);
    Ptr<Node> dst = chain.Get(nodes - 1);
    PacketSinkHelper sink(mode == "udp" ? "ns3::UdpSocketFactory" : "ns3::TcpSocketFactory",
                          InetSocketAddress(Ipv4Address::GetAny(), port));
    ApplicationContainer sinks = sink.Install(dst);
    sinks.Start(Seconds(0.5));
    Ptr<PacketSink> rx = DynamicCast<PacketSink>(sinks.Get(0));
    uint32_t payload = segment;
    if (mode == "udp") {
        payload = 1012;  // 1040-byte IP packets
        OnOffHelper onoff("ns3::UdpSocketFactory", InetSocketAddress(ifs.GetAddress(nodes - 1), port));
        onoff.SetConstantRate(DataRate("2Mbps"), payload);  // twice the PHY rate: the source queue stays full
        onoff.Install(chain.Get(0)).Start(start);
    } else if (mode == "echo") {
        // Both directions at the same full size: the model's "reply" rule, for comparing MAC
        // failures under a two-way load (validation/chain.py --echo).
        payload = 1012;
        UdpEchoServerHelper server(port + 1);
        server.Install(dst).Start(Seconds(0.5));
        UdpEchoClientHelper client(ifs.GetAddress(nodes - 1), port + 1);
        client.SetAttribute("MaxPackets", UintegerValue(1000000));
        client.SetAttribute("Interval", TimeValue(Seconds(1.0 / echo_pps)));
        client.SetAttribute("PacketSize", UintegerValue(payload));
        ApplicationContainer c = client.Install(chain.Get(0));
        c.Start(start);
        c.Get(0)->TraceConnectWithoutContext("Tx", MakeCallback(+[](Ptr<const Packet>) { echo_sent++; }));
        c.Get(0)->TraceConnectWithoutContext("Rx", MakeCallback(+[](Ptr<const Packet>) { echo_received++; }));
    } else {
        BulkSendHelper bulk("ns3::TcpSocketFactory", InetSocketAddress(ifs.GetAddress(nodes - 1), port));
        bulk.SetAttribute("MaxBytes", UintegerValue(0));
        bulk.SetAttribute("SendSize", UintegerValue(segment));  // whole segments into the W-segment buffer
        bulk.Install(chain.Get(0)).Start(start);
    }
    if (mode == "tcp") {
        // Count data segments sent and how many were sent again (a sequence number below the
        // highest sent), from the sender's socket, over the whole run.
        Simulator::Schedule(start + MilliSeconds(1), []() {
            Config::ConnectWithoutContext(
                "/NodeList/0/$ns3::TcpL4Protocol/SocketList/*/Tx",
                MakeCallback(+[](Ptr<const Packet> p, const TcpHeader &h, Ptr<const TcpSocketBase>) {
                    if (p->GetSize() == 0) return;
                    tcp_data_sent++;
                    if (tcp_seen_data && h.GetSequenceNumber() < tcp_highest_sent) tcp_retransmitted++;
                    else tcp_highest_sent = h.GetSequenceNumber();
                    tcp_seen_data = true;
                }));
        });
    }
    // Data PPDUs, to put the data failures in proportion (the model's ppdus).
    Config::ConnectWithoutContext("/NodeList/*/DeviceList/*/$ns3::WifiNetDevice/Phy/PhyTxBegin",
                                  MakeCallback(+[](Ptr<const Packet> p, double) {
                                      WifiMacHeader h;
                                      if (p->PeekHeader(h) && h.IsData()) data_frames++;
                                  }));
    uint64_t at_start = 0, at_stop = 0, echo_sent_t0 = 0, echo_received_t0 = 0, echo_sent_t1 = 0, echo_received_t1 = 0;
    Time t0 = start + Seconds(warmup_s), t1 = t0 + Seconds(measure_s);
    Simulator::Schedule(t0, [&]() {
        at_start = rx->GetTotalRx();
        echo_sent_t0 = echo_sent, echo_received_t0 = echo_received;
    });
    Simulator::Schedule(t1, [&]() {
        at_stop = rx->GetTotalRx();
        echo_sent_t1 = echo_sent, echo_received_t1 = echo_received;
    });
    Simulator::Stop(t1 + MilliSeconds(1));
    Simulator::Run();
    double pkts = double(at_stop - at_start) / payload;
    std::ostringstream out;
    out << std::fixed << std::setprecision(4) << "{\"mode\": \"" << mode << "\", \"nodes\": " << nodes
        << ", \"window\": " << window << ", \"delack\": " << delack << ", \"delack_ms\": " << delack_ms
        << ", \"sack\": " << (sack ? "true" : "false") << ", \"seed\": " << seed << ", \"measure_s\": " << measure_s
        << ", \"payload_bytes\": " << payload << ", \"packets\": " << pkts << ", \"pkt_per_s\": " << pkts / measure_s
        << ", \"mac_data_failed\": " << mac_tx_failed << ", \"mac_retry_drops\": " << mac_tx_dropped
        << ", \"mac_queue_drops\": " << mac_queue_dropped << ", \"mac_rts_failed\": " << mac_rts_failed
        << ", \"mac_rts_retry_drops\": " << mac_rts_dropped << ", \"tcp_data_sent\": " << tcp_data_sent
        << ", \"tcp_retransmitted\": " << tcp_retransmitted << ", \"echo_sent\": " << echo_sent
        << ", \"echo_received\": " << echo_received << ", \"echo_sent_measured\": " << echo_sent_t1 - echo_sent_t0
        << ", \"echo_received_measured\": " << echo_received_t1 - echo_received_t0
        << ", \"data_frames\": " << data_frames << ", \"backoffs_drawn\": " << backoffs_drawn() << "}";
    std::cout << out.str() << std::endl;
    Simulator::Destroy();
    return 0;
}
