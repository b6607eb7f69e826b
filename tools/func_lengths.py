#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The C functions longer than a limit, longest first.

    tools/func_lengths.py [LIMIT [FILE ...]]

A function's length runs from the first line of its signature to its
closing brace; comments, strings and preprocessor lines are blanked first
so that braces inside them do not count.  Without FILE, every C file git
tracks.  Prints "LINES FILE:LINE NAME" per function over LIMIT (default
100) and exits 1 when there is one, else 0.
"""
import sys,re,subprocess
def strip(src):
    # remove comments, strings, char literals, preprocessor lines -> keep newlines
    out=[];i=0;n=len(src)
    while i<n:
        c=src[i]
        if src.startswith('/*',i):
            j=src.find('*/',i+2); j=n if j<0 else j+2
            out.append(re.sub(r'[^\n]',' ',src[i:j])); i=j
        elif src.startswith('//',i):
            j=src.find('\n',i); j=n if j<0 else j
            i=j
        elif c in '"\'':
            j=i+1
            while j<n and src[j]!=c:
                j+= 2 if src[j]=='\\' else 1
            out.append(c+re.sub(r'[^\n]',' ',src[i+1:j])+c); i=j+1
        else:
            out.append(c); i+=1
    s=''.join(out)
    s=re.sub(r'(?m)^\s*#.*(\\\n.*)*$',lambda m: re.sub(r'[^\n]','',m.group(0)),s)
    return s
files=sys.argv[2:] or subprocess.check_output(['git','ls-files','*.c']).decode().split()
lim=int(sys.argv[1]) if len(sys.argv)>1 else 100
res=[]
for f in files:
    s=strip(open(f,errors='replace').read())
    depth=0;start=None
    for m in re.finditer(r'[{}]',s):
        if m.group()=='{':
            if depth==0:
                before=s[:m.start()].rstrip()
                if before.endswith(')'):
                    # find start of signature: previous ';' or '}' at depth 0
                    k=max(before.rfind(';'),before.rfind('}'))
                    sig=s[k+1:m.start()]
                    names=re.findall(r'(\w+)\s*\(',sig)
                    name=names[0] if names else '?'
                    if name in ('START_TEST',): 
                        nm=re.search(r'START_TEST\s*\((\w+)',sig); name='START_TEST '+(nm.group(1) if nm else '')
                    sl=s.count('\n',0,k+1)+1
                    while s.split('\n')[sl-1].strip()=='' : sl+=1
                    start=(sl,name)
                else: start=None
            depth+=1
        else:
            depth-=1
            if depth==0 and start:
                el=s.count('\n',0,m.start())+1
                res.append((el-start[0]+1,f,start[0],start[1])); start=None
res.sort(reverse=True)
over = [(n, f, l, name) for n, f, l, name in res if n > lim]
for n, f, l, name in over:
    print(n, f"{f}:{l}", name)
sys.exit(1 if over else 0)
