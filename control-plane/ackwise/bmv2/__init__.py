"""The bmv2 runtime: where the toolchain is (``toolchain``), the running program's JSON
(``program``), field values (``values``), the Thrift client (``client``) and the simple_switch
launcher (``launcher``). It imports nothing else of ackwise."""
