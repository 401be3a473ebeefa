import csv, sys
for f in sys.argv[1:]:
    rows=list(csv.reader(open(f)))
    hdr=None; data=[]
    for r in rows:
        if len(r)>3 and r[0]=="Address": hdr=r; continue
        if hdr and len(r)==len(hdr) and r[0].startswith("0x"): data.append(r)
    i_s=hdr.index("Warp Stall Sampling (All Samples)"); i_src=hdr.index("Source"); i_ex=hdr.index("Instructions Executed")
    tot=sum(int(r[i_s] or 0) for r in data); ex=sum(int(r[i_ex] or 0) for r in data)
    print(f, "instructions", len(data), "samples", tot, "warp-instructions executed", ex)
    top=sorted(data,key=lambda r:-int(r[i_s] or 0))[:12]
    for r in top: print("  %6s %s  %s"%(r[i_s], r[0][-5:], r[i_src].strip()[:70]))
