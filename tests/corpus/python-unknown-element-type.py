# expect: 3:18 unknown element type
# options: --size N=8
def f(N: int, A: 'complex[N]'):
    for i in range(N):
        A[i] = 1.0
