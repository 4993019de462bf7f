# expect: ok
# options: --size N=16
def f(N: int, sh0_A: 'float32[N][N]', B: 'float32[N][N]', C: 'float32[N][N]'):
    for i in range(N):
        for j in range(N):
            for k in range(N):
                C[i][j] += sh0_A[i][k] * B[k][j]
