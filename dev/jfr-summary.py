# Summarises a JFR recording's execution samples: share per thread (Flink task threads named by their
# operators) and the hottest frames in the job's task threads.
# Usage: jfr print --events jdk.ExecutionSample REC.jfr > samples.txt && python3 dev/jfr-summary.py samples.txt
import re,collections,sys
txt=open(sys.argv[1]).read()
events=txt.split('jdk.ExecutionSample')
by_thread=collections.Counter(); n=0
job_top=collections.Counter(); job_incl=collections.Counter(); jn=0
for e in events:
    t=re.search(r'sampledThread = "(.*?)"',e)
    m=re.search(r'stackTrace = \[(.*?)\n\s*\]',e,re.S)
    if not t or not m: continue
    th=t.group(1)
    frames=[re.sub(r'\s+line:.*','',l.strip()) for l in m.group(1).strip().split('\n') if l.strip() and l.strip()!='...']
    if not frames: continue
    n+=1
    g=re.sub(r'\s*\(\d+/\d+\)#\d+','',th)
    g=re.sub(r'-\d+$','',g)
    by_thread[g]+=1
    if any(k in th for k in ('decode','rank key','delta per rank','rank window','attribution','alerts','sink','Source:')):
        jn+=1
        job_top[frames[0]]+=1
        for f in set(frames): job_incl[f]+=1
print("all samples",n)
for g,c in by_thread.most_common(18): print(f"{100*c/n:5.1f}% {g}")
print("job task threads samples",jn)
print("--- top frames in job task threads")
for f,c in job_top.most_common(20): print(f"{100*c/jn:5.1f}% {f}")
print("--- inclusive (collscope/avro/flink serializers)")
for f,c in job_incl.most_common(400):
    if re.search(r'collscope|avro\.(io|generic|specific)\.\w+\.(read|write)\b|TypeSerializer|PojoSerializer|AvroSerializer|KafkaRecordDeserializationSchema|StreamElementSerializer|LongPrimitiveArray|copy\(',f):
        print(f"{100*c/jn:5.1f}% {f}")
