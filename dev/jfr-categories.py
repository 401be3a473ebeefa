# The job's JFR execution samples by kind of work (inclusive: a sample counts for every category on its stack),
# and who asked for the serializer copies. Needs full stacks:
#   jfr print --stack-depth 64 --events jdk.ExecutionSample REC.jfr > samples.txt && python3 dev/jfr-categories.py samples.txt
import re,collections,sys
txt=open(sys.argv[1]).read()
cats=[('Avro decode of the record (Snapshots.decode -> AvroCodec)','io.collscope.schema.AvroCodec.decode'),
('validation (Snapshots.validate)','io.collscope.schema.Snapshots.validate'),
('copies between chained operators (CopyingChainingOutput)','CopyingChainingOutput'),
('keyBy: serializing records (RecordWriterOutput)','RecordWriterOutput'),
('keyBy: deserializing records (StreamElementSerializer.deserialize)','StreamElementSerializer.deserialize'),
('DeltaFunction.processElement','DeltaFunction.processElement'),
('state copy-on-write get (CopyOnWriteStateMap)','CopyOnWriteStateMap.get'),
('rank window aggregate (RankWindowAggregate.add)','RankWindowAggregate.add'),
('window firing (RankWindowFunction)','RankWindowFunction.process'),
('sink writers (KafkaWriter.write)','KafkaWriter.write'),
('Avro encoding of outputs (AvroRecordSerializer)','AvroRecordSerializer.serialize'),
('history (FileWriter / Parquet)','FileWriter.write'),
('Attributor.attribute','Attributor.attribute'),
('Kafka source record emitter','KafkaRecordEmitter'),
('reading the rank key (SnapshotKeys.peek)','SnapshotKeys.peek'),
]
n=0; thr=collections.Counter(); inc=collections.Counter()
for e in txt.split('jdk.ExecutionSample'):
    t=re.search(r'sampledThread = "(.*?)"',e); m=re.search(r'stackTrace = \[(.*?)\n\s*\]',e,re.S)
    if not t or not m: continue
    th=t.group(1)
    if not (any(k in th for k in ('decode','rank key','delta per rank','rank window','attribution','alerts','sink','Source','AsyncOperations'))): continue
    n+=1
    g=re.sub(r'\s*\(\d+/\d+\)#\d+','',th); g=re.sub(r'-\d+$','',g); thr[g]+=1
    st=m.group(1)
    for name,k in cats:
        if k in st: inc[name]+=1
print("samples in the job's threads (task threads, source fetcher, async checkpoint):",n)
for g,c in thr.most_common(8): print(f"{100*c/n:5.1f}% {g}")
print("--- inclusive")
for name,k in cats: print(f"{100*inc[name]/n:5.1f}% {name}")
print("--- copies by who asked")
cc=collections.Counter(); dec=collections.Counter()
for e in txt.split('jdk.ExecutionSample'):
    t=re.search(r'sampledThread = "(.*?)"',e); m=re.search(r'stackTrace = \[(.*?)\n\s*\]',e,re.S)
    if not t or not m: continue
    th=t.group(1)
    if not (any(k in th for k in ('decode','rank key','delta per rank','rank window','attribution','alerts','sink','Source','AsyncOperations'))): continue
    fr=[l.strip() for l in m.group(1).split('\n') if l.strip()]
    ci=next((i for i,f in enumerate(fr) if re.search(r'Serializer\.copy\(',f)),None)
    if ci is not None:
        who=next((f for f in fr[ci:] if 'CopyingChainingOutput' in f or 'CopyOnWriteStateMap' in f or 'Snapshot' in f),'other')
        who='chained operators' if 'CopyingChainingOutput' in who else ('state copy-on-write' if 'CopyOnWrite' in who else who[:60])
        cc[who]+=1
    # decode path split
    di=next((i for i,f in enumerate(fr) if 'AvroCodec.decode' in f or 'Snapshots.validate' in f or 'AvroSerializer.deserialize' in f or 'AvroSerializer.serialize' in f),None)
    if di is not None: dec[re.sub(r'\(.*','',fr[di])]+=1
for k,c in cc.most_common(): print(f"{100*c/n:5.1f}% {k}")
print("--- Avro work by entry")
for k,c in dec.most_common(): print(f"{100*c/n:5.1f}% {k}")
