# expect: 3:18 malformed array annotation
# options: --size N=8
def f(N: int, A: 'double[N]['):
    for i in range(N):
        A[i] = 1.0
