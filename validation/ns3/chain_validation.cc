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
// The ranges of the model (topologies/wireless.py CHAIN_RANGES: decode within 250 m, carrier sense
// and interference within 550 m) are made physical here with two received power levels and a
// threshold error model:
//   - a node at most 250 m away is received at -80 dBm, one at most 550 m away at -87 dBm, one
//     further away not at all (ChainLoss);
//   - the noise floor is about -93.6 dBm (thermal noise over 22 MHz and ns-3's 7 dB noise figure);
//   - a chunk of a frame is received when its SINR is at least 10 dB, its PHY header when its SINR
//     is at least 5 dB (ThresholdErrorModel), and every frame that reaches a node is detected
//     (preamble detection from -90 dBm) and keeps CCA busy.
// So a frame from 200 m is decoded (13.6 dB), one from 400 m is detected and fails after its header
// (6.6 dB: the node waits EIFS after it, as the model's station does after a frame it senses but
// cannot decode), and a transmission from 400 m that overlaps a frame from 200 m corrupts it
// (6.1 dB), as the model's interference range has it.
//
// It prints one JSON line: packets per second received by the last node over the measurement, and
// the MAC's counters (data and RTS failures, and those given up at the retry limits; frames dropped
// from a full MAC queue are not among them: ns-3 3.37's MacTxDrop does not report them).
#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/mobility-module.h"
#include "ns3/network-module.h"
#include "ns3/traffic-control-module.h"
#include "ns3/wifi-module.h"

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

class ThresholdErrorModel : public ErrorRateModel {
  public:
    static TypeId GetTypeId() {
        static TypeId tid =
            TypeId("ThresholdErrorModel").SetParent<ErrorRateModel>().AddConstructor<ThresholdErrorModel>();
        return tid;
    }

  private:
    double DoGetChunkSuccessRate(WifiMode, const WifiTxVector &, double snr, uint64_t, uint8_t, WifiPpduField field,
                                 uint16_t) const override {
        double threshold_db = field == WIFI_PPDU_FIELD_DATA ? 10.0 : 5.0;
        return 10 * std::log10(snr) >= threshold_db ? 1.0 : 0.0;
    }
};

uint64_t mac_tx_failed = 0, mac_tx_dropped = 0, mac_queue_dropped = 0;
uint64_t mac_rts_failed = 0, mac_rts_dropped = 0;
uint64_t tcp_data_sent = 0, tcp_retransmitted = 0;
SequenceNumber32 tcp_highest_sent(0);
bool tcp_seen_data = false;
uint64_t echo_sent = 0, echo_received = 0;

}  // namespace

int main(int argc, char **argv) {
    std::string mode = "udp";
    uint32_t nodes = 3, window = 2000, delack = 1, queue_pkts = 50, seed = 1;
    double delack_ms = 100, warmup_s = 5, measure_s = 60;
    bool sack = true;
    CommandLine cmd;
    double echo_pps = 5;
    cmd.AddValue("mode", "udp, tcp or echo", mode);
    cmd.AddValue("echo_pps", "echo: packets per second the first node sends (each echoed back by the last)", echo_pps);
    cmd.AddValue("nodes", "nodes on the line (hops + 1)", nodes);
    cmd.AddValue("window", "tcp: the maximum window, segments (the receiver's buffer)", window);
    cmd.AddValue("delack", "tcp: the receiver ACKs every this many segments (1: an ACK per segment)", delack);
    cmd.AddValue("delack_ms", "tcp: ... or this long after the first unacknowledged one", delack_ms);
    cmd.AddValue("sack", "tcp: SACK", sack);
    cmd.AddValue("queue", "MAC queue, packets per node", queue_pkts);
    cmd.AddValue("seed", "run number", seed);
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
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(4 << 20));
    Config::SetDefault("ns3::TcpSocketBase::Sack", BooleanValue(sack));
    Config::SetDefault("ns3::TcpSocketBase::Timestamp", BooleanValue(true));
    Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(MilliSeconds(200)));

    NodeContainer chain;
    chain.Create(nodes);
    WifiHelper wifi;
    wifi.SetStandard(WIFI_STANDARD_80211b);
    wifi.SetRemoteStationManager("ns3::ConstantRateWifiManager", "DataMode", StringValue("DsssRate1Mbps"),
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
    for (uint32_t i = 0; i < devs.GetN(); i++)
        DynamicCast<WifiNetDevice>(devs.Get(i))->GetPhy()->SetErrorRateModel(CreateObject<ThresholdErrorModel>());

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
    uint64_t at_start = 0, at_stop = 0;
    Time t0 = start + Seconds(warmup_s), t1 = t0 + Seconds(measure_s);
    Simulator::Schedule(t0, [&]() { at_start = rx->GetTotalRx(); });
    Simulator::Schedule(t1, [&]() { at_stop = rx->GetTotalRx(); });
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
        << ", \"echo_received\": " << echo_received << "}";
    std::cout << out.str() << std::endl;
    Simulator::Destroy();
    return 0;
}
